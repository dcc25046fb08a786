package alert

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A stream record's images arrive as aws-lambda-go's events.DynamoDBAttributeValue, while the
// store's item mapping (dynamo.DecodeItem, built on the SDK's attributevalue package) reads the
// SDK's types.AttributeValue. Neither library converts between the two, so these two functions
// do, type by type. events.DynamoDBAttributeValue's accessors panic on the wrong type, so each
// value is read only through the accessor its DataType names; and since a zero value claims to be
// binary while holding nothing (its accessor panics too), ToSDK also turns any such panic into an
// error.

// ToSDK converts a stream image to the SDK's attribute values. An attribute of an unknown type is
// an error naming it (never a panic).
func ToSDK(image map[string]events.DynamoDBAttributeValue) (_ map[string]types.AttributeValue, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed attribute value: %v", p)
		}
	}()
	out := make(map[string]types.AttributeValue, len(image))
	for name, v := range image {
		av, err := toSDK(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = av
	}
	return out, nil
}

func toSDK(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		list := v.List()
		out := make([]types.AttributeValue, len(list))
		for i, e := range list {
			av, err := toSDK(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m, err := ToSDK(v.Map())
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	default:
		return nil, fmt.Errorf("unknown attribute type %d", v.DataType())
	}
}

// FromSDK converts an item read with the SDK to a stream image, as DynamoDB Streams would put it
// in a record (the local stack feeds the alert function with it). An unknown type is an error.
func FromSDK(item map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for name, v := range item {
		ev, err := fromSDK(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = ev
	}
	return out, nil
}

func fromSDK(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *types.AttributeValueMemberL:
		out := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			ev, err := fromSDK(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = ev
		}
		return events.NewListAttribute(out), nil
	case *types.AttributeValueMemberM:
		m, err := FromSDK(v.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	default:
		return events.DynamoDBAttributeValue{}, fmt.Errorf("unknown attribute type %T", v)
	}
}
