package lambdaenv

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// dynamoDBChecksumID is the DynamoDB client's response CRC32 validation
// (service/dynamodb/internal/customizations).
const dynamoDBChecksumID = "DynamoDB:ResponseChecksumValidation"

// AcceptMissingCRC32 is an API option (aws.Config.APIOptions) for the
// DynamoDB clients: a response without an X-Amz-Crc32 header has nothing
// to validate. The SDK's validation treats a missing header as the
// checksum 0, so closing such a body logs "WARN failed to close HTTP
// response body … response did not match expected checksum". DynamoDB
// always sends the header; DynamoDB Local omits it on its error responses,
// e.g. every ConditionalCheckFailed (a duplicate delivery's claim), which
// the SDK decodes correctly all the same. A response that carries the
// header is still validated. Other services' stacks are left alone.
func AcceptMissingCRC32(stack *middleware.Stack) error {
	if _, ok := stack.Deserialize.Get(dynamoDBChecksumID); !ok {
		return nil
	}
	return stack.Deserialize.Insert(missingCRC32{}, dynamoDBChecksumID, middleware.After)
}

// missingCRC32 runs inside the validation: it gives a response without a
// checksum header the checksum of its body, which it reads (such bodies
// are DynamoDB Local's small error documents).
type missingCRC32 struct{}

func (missingCRC32) ID() string { return "hookpack:AcceptMissingCRC32" }

func (missingCRC32) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	out, md, err := next.HandleDeserialize(ctx, in)
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if err != nil || !ok || resp.Body == nil || resp.Header.Get("X-Amz-Crc32") != "" {
		return out, md, err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return out, md, rerr
	}
	resp.Header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	return out, md, nil
}
