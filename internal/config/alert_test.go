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

func TestLoadAlertEventBus(t *testing.T) {
	for bus, ok := range map[string]bool{
		"":                  true,
		"stellar-transfers": true,
		"arn:aws:events:us-east-1:123456789012:event-bus/stellar-transfers": true,
		"two words": false,
		"arn:aws:sns:us-east-1:123456789012:alerts": false,
	} {
		env := map[string]string{"TABLE_NAME": "transfers", "EVENT_BUS_NAME": bus}
		a, err := LoadAlert(func(k string) string { return env[k] })
		if ok && (err != nil || a.EventBus != bus) {
			t.Errorf("EVENT_BUS_NAME=%q: %+v, %v", bus, a, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "EVENT_BUS_NAME")) {
			t.Errorf("EVENT_BUS_NAME=%q: err = %v, want it refused", bus, err)
		}
	}
}
