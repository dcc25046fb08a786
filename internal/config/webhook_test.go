package config

import (
	"strings"
	"testing"
)

func TestLoadWebhook(t *testing.T) {
	env := map[string]string{"WEBHOOK_URL": "https://hooks.example.com/stellar?token=t0k3n", "WEBHOOK_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:hook",
		"QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/webhook"}
	w, err := LoadWebhook(func(k string) string { return env[k] })
	if err != nil || w.URL != env["WEBHOOK_URL"] || w.SecretARN != env["WEBHOOK_SECRET_ARN"] || w.QueueURL != env["QUEUE_URL"] {
		t.Fatalf("LoadWebhook = %+v, %v", w, err)
	}
	for url, ok := range map[string]bool{
		"http://127.0.0.1:8080/hook":         true,
		"http://localhost/hook":              true,
		"http://hooks.example.com/hook?t=x1": false,
		"ftp://hooks.example.com/":           false,
		"https://user:pw@hooks.example.com/": false,
		"hooks.example.com/hook":             false,
		"":                                   false,
	} {
		env := map[string]string{"WEBHOOK_URL": url, "WEBHOOK_SECRET_ARN": "hook"}
		_, err := LoadWebhook(func(k string) string { return env[k] })
		if ok != (err == nil) {
			t.Errorf("WEBHOOK_URL=%q: err = %v, want ok %v", url, err, ok)
		}
		if err != nil && (strings.Contains(err.Error(), "x1") || strings.Contains(err.Error(), "pw")) {
			t.Errorf("WEBHOOK_URL=%q: the error %q shows the URL's secret part", url, err)
		}
	}
	if _, err := LoadWebhook(func(k string) string { return map[string]string{"WEBHOOK_URL": "https://h.example.com/"}[k] }); err == nil ||
		!strings.Contains(err.Error(), "WEBHOOK_SECRET_ARN") {
		t.Errorf("no secret: err = %v", err)
	}
}
