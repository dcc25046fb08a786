package config

import (
	"strings"
	"testing"
)

func TestLoadAlert(t *testing.T) {
	env := map[string]string{"TABLE_NAME": "transfers", "ALERT_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:alerts"}
	a, err := LoadAlert(func(k string) string { return env[k] })
	if err != nil || a.Table != "transfers" || a.TopicARN != env["ALERT_TOPIC_ARN"] {
		t.Fatalf("LoadAlert = %+v, %v", a, err)
	}
	env = map[string]string{"ALERT_TOPIC_ARN": "alerts"}
	_, err = LoadAlert(func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "TABLE_NAME") || !strings.Contains(err.Error(), "ALERT_TOPIC_ARN") {
		t.Fatalf("err = %v, want both problems", err)
	}
}
