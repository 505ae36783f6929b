// Package attr builds and reads the DynamoDB attribute values hookpack's
// items carry: strings and integers (epoch times, counters). A value of
// another type, or none, reads as the zero value, as aws.ToString does.
package attr

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// S returns s as a string attribute.
func S(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// N returns n as a number attribute.
func N(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// ToString returns a string attribute's value, or "" for any other value
// or none.
func ToString(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// ToInt returns a number attribute's value, or 0 for any other value, a
// number that is not an int64, or none.
func ToInt(v types.AttributeValue) int64 {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0
	}
	return i
}
