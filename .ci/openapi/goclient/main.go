// Command goclient drives the local stack through the client oapi-codegen generates from
// internal/api/openapi.yaml with its default configuration (into ../gen/goclient, not committed):
// a transfer, its replay, its GET, the wallet's history, a conflict, a 422, a 202 and API
// Gateway's own 500 and 503 (from the stub gateway.py serves). Run by run.sh
// (make test-openapi-clients) with API_URL, STACK_URL (the stack's /_sim/stack) and GATEWAY_URL,
// each on 127.0.0.1; exits non-zero at the first answer that is not the documented one.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"time"

	client "openapiclients/gen/goclient"
)

var local = regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+(/|$)`)

func env(name string) string {
	v := os.Getenv(name)
	if !local.MatchString(v) {
		fail("%s=%q is not a 127.0.0.1 URL", name, v)
	}
	return v
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "go: FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func step(name string) { fmt.Println("go:", name) }

func check(ok bool, format string, args ...any) {
	if !ok {
		fail(format, args...)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		fail("%v", err)
	}
	return v
}

func main() {
	ctx := context.Background()
	var stack struct {
		Wallets []struct{ Account string } `json:"wallets"`
	}
	resp := must(http.Get(env("STACK_URL")))
	check(json.NewDecoder(resp.Body).Decode(&stack) == nil && len(stack.Wallets) >= 3, "GET /_sim/stack: no wallets")
	resp.Body.Close()
	wallet := stack.Wallets[0].Account // ts uses the second, py the third: each its own history
	run := "go-" + strconv.FormatInt(time.Now().UnixMilli(), 36)
	api := must(client.NewClientWithResponses(env("API_URL")))

	withdraw := func(amount string) client.TransferRequest {
		return client.TransferRequest{OperationType: client.TransferRequestOperationTypeWithdraw, WalletAddress: wallet, Amount: amount, Asset: "USDC"}
	}
	post := func(key string, body client.TransferRequest, prefer *string) *client.CreateTransferResponse {
		return must(api.CreateTransferWithResponse(ctx, &client.CreateTransferParams{IdempotencyKey: key, Prefer: prefer}, body))
	}
	problem := func(p *client.Problem, status int, code string) {
		check(p != nil && p.Status == status && p.Code == code, "want a %d %s problem, got %+v", status, code, p)
	}

	step("createTransfer: 200")
	first := run + "-first"
	r := post(first, withdraw("0.5"), nil)
	check(r.StatusCode() == 200 && r.JSON200 != nil && !r.JSON200.Replayed && r.JSON200.Ledger >= 1, "POST: %d %s", r.StatusCode(), r.Body)
	check(r.Headers200 == nil || r.Headers200.IdempotentReplayed == nil, "a first answer says Idempotent-Replayed")
	hash := r.JSON200.TransactionHash

	step("createTransfer again, the key quoted: the replay")
	r = post(`"`+first+`";client=go`, withdraw("0.50"), nil)
	check(r.StatusCode() == 200 && r.JSON200.Replayed && r.JSON200.TransactionHash == hash, "replay: %d %s", r.StatusCode(), r.Body)
	check(r.Headers200 != nil && r.Headers200.IdempotentReplayed != nil && *r.Headers200.IdempotentReplayed == "true", "the replay has no Idempotent-Replayed: true")

	step("getTransfer")
	g := must(api.GetTransferWithResponse(ctx, wallet, first))
	check(g.StatusCode() == 200 && g.JSON200.Status == client.TransferViewStatusSuccess && *g.JSON200.TransactionHash == hash, "GET: %d %s", g.StatusCode(), g.Body)

	step("createTransfer, same key, another amount: 409 IDEMPOTENCY_KEY_CONFLICT")
	r = post(first, withdraw("0.6"), nil)
	check(r.StatusCode() == 409, "conflict: %d %s", r.StatusCode(), r.Body)
	problem(r.ApplicationproblemJSON409, 409, "IDEMPOTENCY_KEY_CONFLICT")
	check(r.ApplicationproblemJSON409.Classification == client.Terminal, "conflict: classification %s", r.ApplicationproblemJSON409.Classification)

	step("createTransfer, a negative amount: 422 INVALID_AMOUNT")
	r = post(run+"-invalid", withdraw("-1"), nil)
	check(r.StatusCode() == 422, "422: %d %s", r.StatusCode(), r.Body)
	problem(r.ApplicationproblemJSON422, 422, "INVALID_AMOUNT")

	step("createTransfer, Prefer: respond-async: 202, then its GET until success")
	async := run + "-async"
	pref := "respond-async"
	r = post(async, withdraw("0.25"), &pref)
	check(r.StatusCode() == 202 && r.JSON202.Status == client.TransferViewStatusPending, "202: %d %s", r.StatusCode(), r.Body)
	check(*r.Headers202.PreferenceApplied == "respond-async" && *r.Headers202.Location == "/wallets/"+wallet+"/transfers/"+async,
		"202 headers: %+v", r.Headers202)
	for i := 0; ; i++ {
		g = must(api.GetTransferWithResponse(ctx, wallet, async))
		check(g.StatusCode() == 200, "GET after 202: %d %s", g.StatusCode(), g.Body)
		if g.JSON200.Status == client.TransferViewStatusSuccess {
			break
		}
		check(g.JSON200.Status == client.TransferViewStatusPending && i < 300, "the queued transfer: %s", g.Body)
		time.Sleep(200 * time.Millisecond)
	}

	step("listTransfers: a page of one, then the next")
	one := 1
	h := must(api.ListTransfersWithResponse(ctx, wallet, &client.ListTransfersParams{Limit: &one}))
	check(h.StatusCode() == 200 && len(h.JSON200.Items) == 1 && h.JSON200.Items[0].IdempotencyKey == async && h.JSON200.NextCursor != nil, "history: %d %s", h.StatusCode(), h.Body)
	item := h.JSON200.Items[0]
	check(*item.Amount == "0.25" && *item.Asset == "USDC" && *item.OperationType == client.TransferHistoryItemOperationTypeWithdraw && !item.CreatedAt.IsZero(), "history item: %s", h.Body)
	h = must(api.ListTransfersWithResponse(ctx, wallet, &client.ListTransfersParams{Limit: &one, Cursor: h.JSON200.NextCursor}))
	check(h.StatusCode() == 200 && len(h.JSON200.Items) == 1 && h.JSON200.Items[0].IdempotencyKey == first && *h.JSON200.Items[0].TransactionHash == hash, "history page 2: %s", h.Body)

	gw := must(client.NewClientWithResponses(env("GATEWAY_URL")))
	for _, c := range []struct {
		status  int
		message string
	}{{500, "Internal Server Error"}, {503, "Service Unavailable"}} {
		step(fmt.Sprintf("API Gateway's own %d {\"message\"}", c.status))
		r = must(gw.CreateTransferWithResponse(ctx, &client.CreateTransferParams{IdempotencyKey: run + "-gw" + strconv.Itoa(c.status)}, withdraw("1")))
		body := r.JSON500
		if c.status == 503 {
			body = r.JSON503
		}
		check(r.StatusCode() == c.status && body != nil, "gateway %d: %d %s", c.status, r.StatusCode(), r.Body)
		m := must(body.AsGatewayMessage())
		check(m.Message == c.message, "gateway %d: message %q", c.status, m.Message)
	}
	step("the service's own 503 problem, beside it")
	r = must(gw.CreateTransferWithResponse(ctx, &client.CreateTransferParams{IdempotencyKey: run + "-problem503"}, withdraw("1")))
	check(r.StatusCode() == 503 && r.ApplicationproblemJSON503 != nil && r.JSON503 == nil, "problem 503: %d %s", r.StatusCode(), r.Body)
	p := must(r.ApplicationproblemJSON503.AsProblem())
	problem(&p, 503, "STORE_UNAVAILABLE")
	check(*r.Headers503.RetryAfter == "2", "problem 503: Retry-After %v", r.Headers503.RetryAfter)
	step("ok")
}
