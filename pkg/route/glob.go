package route

// Glob reports whether s matches pattern, in which * matches any run of
// bytes (empty, dots and slashes included) and every other byte itself.
// It runs in time proportional to len(pattern)·len(s) at worst, without
// recursion or allocation.
func Glob(pattern, s string) bool {
	px, sx := 0, 0
	// Where to restart after a mismatch: just after the last *, with
	// that * taking one more byte of s.
	nextPx, nextSx := 0, 0
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; {
			case c == '*':
				nextPx, nextSx = px, sx+1
				px++
				continue
			case sx < len(s) && s[sx] == c:
				px++
				sx++
				continue
			}
		}
		if 0 < nextSx && nextSx <= len(s) {
			px, sx = nextPx, nextSx
			continue
		}
		return false
	}
	return true
}
