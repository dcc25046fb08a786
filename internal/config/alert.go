package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Alert is what the alert function reads at init: it needs the table (for the in-doubt gauge)
// and, optionally, an SNS topic, but no Stellar settings.
type Alert struct {
	Table          string // TABLE_NAME
	DynamoEndpoint string // DYNAMODB_ENDPOINT (the local stack)
	// TopicARN is the SNS topic in-doubt alerts are published to (ALERT_TOPIC_ARN); empty means
	// log only.
	TopicARN string
	// EventBus is the EventBridge bus the settlement events are published to (EVENT_BUS_NAME: a
	// bus name or ARN; README.md, "Settlement events"); empty means none. Another endpoint is the
	// AWS SDK's own AWS_ENDPOINT_URL_EVENTBRIDGE.
	EventBus string
	// Retention is how long a lasting record of a settled transfer is kept
	// (RECORD_RETENTION_DAYS, whole days from 0 to 36500; 0, the default, keeps it for ever).
	Retention time.Duration
}

// maxRetentionDays bounds RECORD_RETENTION_DAYS: a hundred years.
const maxRetentionDays = 36500

// eventBusName is an EventBridge bus name (PutEventsRequestEntry.EventBusName: a name of 1 to
// 256 characters of [/\.\-_A-Za-z0-9]) or a bus ARN.
var eventBusName = regexp.MustCompile(`^([/\.\-_A-Za-z0-9]{1,256}|arn:aws[\w-]*:events:[a-z0-9-]+:\d{12}:event-bus/[/\.\-_A-Za-z0-9]{1,256})$`)

// LoadAlert reads and validates the alert function's configuration.
func LoadAlert(getenv Getenv) (Alert, error) {
	a := Alert{Table: getenv("TABLE_NAME"), DynamoEndpoint: getenv("DYNAMODB_ENDPOINT"), TopicARN: strings.TrimSpace(getenv("ALERT_TOPIC_ARN")),
		EventBus: strings.TrimSpace(getenv("EVENT_BUS_NAME"))}
	var errs []error
	if a.Table == "" {
		errs = append(errs, errors.New("TABLE_NAME is required"))
	}
	if a.TopicARN != "" && !strings.HasPrefix(a.TopicARN, "arn:") {
		errs = append(errs, fmt.Errorf("ALERT_TOPIC_ARN must be an SNS topic ARN (arn:aws:sns:...), not %q", a.TopicARN))
	}
	if a.EventBus != "" && !eventBusName.MatchString(a.EventBus) {
		errs = append(errs, fmt.Errorf("EVENT_BUS_NAME must be an EventBridge bus name or ARN, not %q", a.EventBus))
	}
	if v := strings.TrimSpace(getenv("RECORD_RETENTION_DAYS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxRetentionDays {
			errs = append(errs, fmt.Errorf("RECORD_RETENTION_DAYS must be a whole number of days from 0 (for ever) to %d, not %q", maxRetentionDays, v))
		} else {
			a.Retention = time.Duration(n) * 24 * time.Hour
		}
	}
	if len(errs) > 0 {
		return Alert{}, fmt.Errorf("config: %w", errors.Join(errs...))
	}
	return a, nil
}

// LoadEventBus reads EVENT_BUS_NAME for the reconcile function (its daily reconciliation's
// event): "" when unset, an error when it is neither a bus name nor a bus ARN.
func LoadEventBus(getenv Getenv) (string, error) {
	bus := strings.TrimSpace(getenv("EVENT_BUS_NAME"))
	if bus != "" && !eventBusName.MatchString(bus) {
		return "", fmt.Errorf("config: EVENT_BUS_NAME must be an EventBridge bus name or ARN, not %q", bus)
	}
	return bus, nil
}
