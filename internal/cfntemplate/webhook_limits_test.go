package cfntemplate_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/webhook"
)

// WebhookEndpoint's AllowedPattern refuses at deploy time every URL the function refuses at init
// (config.LoadWebhook, webhook.CheckEndpoint): one it lets through deploys a WebhookFunction
// whose every init fails, so every event cycles on the queue's visibility until the dead-letter
// queue, instead of the deployment failing on the typo.
func TestWebhookEndpointPatternNeverAdmitsAURLTheFunctionRefuses(t *testing.T) {
	tpl := load(t)
	pat, ok := cfntemplate.String(tpl.Parameters["WebhookEndpoint"]["AllowedPattern"])
	if !ok {
		t.Fatal("WebhookEndpoint has no AllowedPattern")
	}
	re := regexp.MustCompile(pat)
	for _, u := range []string{
		"https://hooks.example.com/stellar?token=t0k3n",
		"https://user:pw@hooks.example.com/stellar",
		"https:///stellar",
		"https://hooks.example.com/%zz",
	} {
		e := map[string]string{"WEBHOOK_URL": u, "WEBHOOK_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf"}
		_, err := config.LoadWebhook(func(k string) string { return e[k] })
		if re.MatchString(u) && err != nil {
			t.Errorf("WebhookEndpoint %q deploys (AllowedPattern %s) but WebhookFunction refuses it at init: %v", u, pat, err)
		}
	}
}

// SettlementWebhookQueue keeps a message longer than its retries can take, so that every event
// the receiver never accepted ends in the dead-letter queue, which pages, rather than expiring
// unseen (SQS deletes a message older than the queue's MessageRetentionPeriod, in flight or not).
// Each of the MaxAttempts-1 waits may be as long as SQS's longest visibility, 12 hours: a
// receiver answering 503 with a long Retry-After gets that wait every time.
func TestWebhookQueueNeverExpiresAMessageBeforeItsLastAttempt(t *testing.T) {
	tpl := load(t)
	q := tpl.Resources["SettlementWebhookQueue"].Properties
	v, _ := cfntemplate.Lookup(q, "MessageRetentionPeriod")
	secs, err := strconv.Atoi(fmt.Sprint(v))
	if err != nil {
		t.Fatalf("SettlementWebhookQueue MessageRetentionPeriod = %v", v)
	}
	retention := time.Duration(secs) * time.Second
	longest := time.Duration(webhook.MaxAttempts-1)*12*time.Hour + time.Duration(webhook.MaxAttempts)*webhook.RequestTimeout
	if retention < longest {
		t.Errorf("SettlementWebhookQueue keeps a message %s; %d waits of up to 12 hours take %s, so a receiver sending Retry-After loses the event without a dead letter",
			retention, webhook.MaxAttempts-1, longest)
	}
}

// The receiver's URL may carry its token in the query (webhook.CheckEndpoint hides it from every
// error and log for that reason), so WebhookEndpoint is NoEcho: CloudFormation otherwise answers
// it in clear to anyone allowed cloudformation:DescribeStacks, and shows it in the console's
// Parameters tab and in every change set.
func TestWebhookEndpointNeverShowsInTheStacksParameters(t *testing.T) {
	tpl := load(t)
	if v := fmt.Sprint(tpl.Parameters["WebhookEndpoint"]["NoEcho"]); v != "true" {
		t.Errorf("WebhookEndpoint NoEcho = %s, want true: DescribeStacks shows the URL, its query's token included", v)
	}
}
