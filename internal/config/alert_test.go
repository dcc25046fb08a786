package config

import (
	"strings"
	"testing"
	"time"
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

func TestLoadAlertRecordRetention(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"": 0, "0": 0, "1": 24 * time.Hour, " 2555 ": 2555 * 24 * time.Hour, "36500": 36500 * 24 * time.Hour,
		"-1": -1, "36501": -1, "7d": -1, "1.5": -1, "1e3": -1,
	} {
		env := map[string]string{"TABLE_NAME": "transfers", "RECORD_RETENTION_DAYS": v}
		a, err := LoadAlert(func(k string) string { return env[k] })
		if want >= 0 && (err != nil || a.Retention != want) {
			t.Errorf("RECORD_RETENTION_DAYS=%q: %+v, %v; want %s", v, a, err, want)
		}
		if want < 0 && (err == nil || !strings.Contains(err.Error(), "RECORD_RETENTION_DAYS")) {
			t.Errorf("RECORD_RETENTION_DAYS=%q: err = %v, want it refused", v, err)
		}
	}
}
