package config

import (
	"errors"
	"fmt"
	"strings"
)

// Alert is what the alert function reads at init: it needs the table (for the in-doubt gauge)
// and, optionally, an SNS topic, but no Stellar settings.
type Alert struct {
	Table          string // TABLE_NAME
	DynamoEndpoint string // DYNAMODB_ENDPOINT (the local stack)
	// TopicARN is the SNS topic in-doubt alerts are published to (ALERT_TOPIC_ARN); empty means
	// log only.
	TopicARN string
}

// LoadAlert reads and validates the alert function's configuration.
func LoadAlert(getenv Getenv) (Alert, error) {
	a := Alert{Table: getenv("TABLE_NAME"), DynamoEndpoint: getenv("DYNAMODB_ENDPOINT"), TopicARN: strings.TrimSpace(getenv("ALERT_TOPIC_ARN"))}
	var errs []error
	if a.Table == "" {
		errs = append(errs, errors.New("TABLE_NAME is required"))
	}
	if a.TopicARN != "" && !strings.HasPrefix(a.TopicARN, "arn:") {
		errs = append(errs, fmt.Errorf("ALERT_TOPIC_ARN must be an SNS topic ARN (arn:aws:sns:...), not %q", a.TopicARN))
	}
	if len(errs) > 0 {
		return Alert{}, fmt.Errorf("config: %w", errors.Join(errs...))
	}
	return a, nil
}
