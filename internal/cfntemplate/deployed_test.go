package cfntemplate_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/webhook"
)

// The deployed template (template.yaml at the repository root) held to the code.

// functions maps each function's logical ID to its directory under functions/. The read-only
// operators' function is the reconcile binary (RECONCILE_ACTIONS=read).
var functions = map[string]string{"ApiFunction": "api", "AlertFunction": "alert", "ReconcileFunction": "reconcile",
	"InDoubtReaderFunction": "reconcile", "SubmitterFunction": "submitter", "WebhookFunction": "webhook"}

func load(t *testing.T) *cfntemplate.Template {
	t.Helper()
	tpl, err := cfntemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	got, ok := cfntemplate.Lookup(v, path...)
	if !ok {
		t.Fatalf("template: no %v", path)
	}
	return got
}

func str(t *testing.T, v any, path ...any) string {
	t.Helper()
	s, ok := cfntemplate.String(get(t, v, path...))
	if !ok {
		t.Fatalf("template: %v is not a scalar", path)
	}
	return s
}

// The table, its index and its stream are exactly dynamo.TableDefinition; TTL is on
// dynamo.TTLAttribute; the table survives a stack deletion and has PITR.
func TestTableMatchesDefinition(t *testing.T) {
	tpl := load(t)
	ids := tpl.ResourcesOfType("AWS::DynamoDB::Table")
	if len(ids) != 1 {
		t.Fatalf("tables = %v, want exactly one", ids)
	}
	table := tpl.Resources[ids[0]]
	p := table.Properties
	def := dynamo.TableDefinition("transfers")

	if got := str(t, p, "BillingMode"); got != string(def.BillingMode) {
		t.Errorf("BillingMode = %s, want %s", got, def.BillingMode)
	}
	var wantAttrs, gotAttrs []string
	for _, a := range def.AttributeDefinitions {
		wantAttrs = append(wantAttrs, aws.ToString(a.AttributeName)+" "+string(a.AttributeType))
	}
	for i := range get(t, p, "AttributeDefinitions").([]any) {
		gotAttrs = append(gotAttrs, str(t, p, "AttributeDefinitions", i, "AttributeName")+" "+str(t, p, "AttributeDefinitions", i, "AttributeType"))
	}
	sort.Strings(wantAttrs)
	sort.Strings(gotAttrs)
	if !slices.Equal(gotAttrs, wantAttrs) {
		t.Errorf("AttributeDefinitions = %v, want %v", gotAttrs, wantAttrs)
	}
	keySchema := func(v any) []string {
		var out []string
		for i := range v.([]any) {
			out = append(out, str(t, v, i, "AttributeName")+" "+str(t, v, i, "KeyType"))
		}
		return out
	}
	var wantKeys []string
	for _, k := range def.KeySchema {
		wantKeys = append(wantKeys, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	if got := keySchema(get(t, p, "KeySchema")); !slices.Equal(got, wantKeys) {
		t.Errorf("KeySchema = %v, want %v", got, wantKeys)
	}

	gsis := get(t, p, "GlobalSecondaryIndexes").([]any)
	if len(gsis) != len(def.GlobalSecondaryIndexes) {
		t.Fatalf("%d global secondary indexes, want %d", len(gsis), len(def.GlobalSecondaryIndexes))
	}
	for _, want := range def.GlobalSecondaryIndexes {
		name := aws.ToString(want.IndexName)
		i := slices.IndexFunc(gsis, func(g any) bool { s, _ := cfntemplate.Lookup(g, "IndexName"); return s == name })
		if i < 0 {
			t.Errorf("index %s missing", name)
			continue
		}
		var wk []string
		for _, k := range want.KeySchema {
			wk = append(wk, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
		}
		if got := keySchema(get(t, gsis[i], "KeySchema")); !slices.Equal(got, wk) {
			t.Errorf("index %s KeySchema = %v, want %v", name, got, wk)
		}
		if got := str(t, gsis[i], "Projection", "ProjectionType"); got != string(want.Projection.ProjectionType) {
			t.Errorf("index %s projection = %s, want %s", name, got, want.Projection.ProjectionType)
		}
		var nonKey []string
		if got, ok := cfntemplate.Lookup(gsis[i], "Projection", "NonKeyAttributes"); ok {
			for _, a := range got.([]any) {
				nonKey = append(nonKey, fmt.Sprint(a))
			}
		}
		if !slices.Equal(nonKey, want.Projection.NonKeyAttributes) {
			t.Errorf("index %s NonKeyAttributes = %v, want %v", name, nonKey, want.Projection.NonKeyAttributes)
		}
	}
	if got := str(t, p, "StreamSpecification", "StreamViewType"); !aws.ToBool(def.StreamSpecification.StreamEnabled) || got != string(def.StreamSpecification.StreamViewType) {
		t.Errorf("StreamViewType = %s, want %s", got, def.StreamSpecification.StreamViewType)
	}
	if got := str(t, p, "TimeToLiveSpecification", "AttributeName"); got != dynamo.TTLAttribute || str(t, p, "TimeToLiveSpecification", "Enabled") != "true" {
		t.Errorf("TTL on %s, want %s enabled", got, dynamo.TTLAttribute)
	}
	if str(t, p, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled") != "true" {
		t.Error("point-in-time recovery is off")
	}
	if str(t, p, "DeletionProtectionEnabled") != "true" || table.DeletionPolicy != "Retain" {
		t.Errorf("deletion protection %v, DeletionPolicy %q: want true and Retain", p["DeletionProtectionEnabled"], table.DeletionPolicy)
	}
	// Every index a policy names exists.
	raw, _ := os.ReadFile("../../template.yaml")
	for _, m := range regexp.MustCompile(`/index/([A-Za-z0-9_.*-]+)`).FindAllStringSubmatch(string(raw), -1) {
		if m[1] != dynamo.InDoubtIndex && m[1] != dynamo.WalletIndex && m[1] != dynamo.RecordIndex {
			t.Errorf("a policy names index %q; the table's indexes are %q, %q and %q", m[1], dynamo.InDoubtIndex, dynamo.WalletIndex, dynamo.RecordIndex)
		}
	}
}

// Every function: provided.al2023 on arm64, bootstrap, built by the Makefile's build-<LogicalId>
// target from functions/<dir>, traced, logging JSON to its own log group, with its own role.
func TestFunctions(t *testing.T) {
	tpl := load(t)
	globals := tpl.Globals["Function"]
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	ids := tpl.ResourcesOfType("AWS::Serverless::Function")
	sort.Strings(ids)
	if want := []string{"AlertFunction", "ApiFunction", "InDoubtReaderFunction", "ReconcileFunction", "SubmitterFunction", "WebhookFunction"}; !slices.Equal(ids, want) {
		t.Fatalf("functions = %v, want %v", ids, want)
	}
	for _, id := range ids {
		fn := tpl.Resources[id]
		prop := func(path ...any) string {
			if v, ok := cfntemplate.Lookup(fn.Properties, path...); ok {
				s, _ := cfntemplate.String(v)
				return s
			}
			v, _ := cfntemplate.Lookup(map[string]any(globals), path...)
			s, _ := cfntemplate.String(v)
			return s
		}
		for path, want := range map[string]string{
			"Runtime": "provided.al2023", "Handler": "bootstrap", "Tracing": "Active",
			"LoggingConfig.LogFormat": "JSON", "CodeUri": ".",
		} {
			var p []any
			for _, s := range strings.Split(path, ".") {
				p = append(p, s)
			}
			if got := prop(p...); got != want {
				t.Errorf("%s %s = %q, want %q", id, path, got, want)
			}
		}
		arch, ok := cfntemplate.Lookup(fn.Properties, "Architectures")
		if !ok {
			arch, _ = cfntemplate.Lookup(map[string]any(globals), "Architectures")
		}
		if !reflect.DeepEqual(arch, []any{"arm64"}) {
			t.Errorf("%s Architectures = %v, want [arm64]", id, arch)
		}
		if fn.Metadata["BuildMethod"] != "makefile" {
			t.Errorf("%s BuildMethod = %v, want makefile", id, fn.Metadata["BuildMethod"])
		}
		target := regexp.MustCompile(`(?m)^build-` + id + `:\n\t.*\blambda_build,` + functions[id] + `,\$\(ARTIFACTS_DIR\)\)`)
		if !target.Match(makefile) {
			t.Errorf("Makefile has no build-%s target building ./functions/%s into $(ARTIFACTS_DIR)", id, functions[id])
		}
		if role := get(t, fn.Properties, "Role"); !reflect.DeepEqual(role, map[string]any{"Fn::GetAtt": []any{id + "Role", "Arn"}}) {
			t.Errorf("%s Role = %v, want its own %sRole", id, role, id)
		}
		if lg := get(t, fn.Properties, "LoggingConfig", "LogGroup"); !reflect.DeepEqual(lg, map[string]any{"Ref": id + "LogGroup"}) {
			t.Errorf("%s LogGroup = %v, want %sLogGroup", id, lg, id)
		}
		if timeout, err := strconv.Atoi(prop("Timeout")); err != nil || timeout <= 0 || timeout > 60 {
			t.Errorf("%s Timeout = %q", id, prop("Timeout"))
		}
	}
}

// The functions that read config.Load get everything it requires from the template, and the
// API function's budget fits in API Gateway's 30 s with the orchestrator's margin.
func TestEnvironmentAndTimeouts(t *testing.T) {
	tpl := load(t)
	for _, id := range []string{"ApiFunction", "ReconcileFunction", "InDoubtReaderFunction", "SubmitterFunction"} {
		e := env(t, tpl, id, sample)
		if _, err := config.Load(func(k string) string { return e[k] }); err != nil {
			t.Errorf("%s: config.Load over the template's environment: %v", id, err)
		}
	}
	// The API function signs. The alert function never sees a key. The reconcile function reads
	// the secret only on a stack with channel accounts (its "channels" action creates them), so
	// both its SIGNING_SECRET_ARN and its permission to read it are conditional on HasChannels.
	if e := env(t, tpl, "ApiFunction", sample); !strings.HasPrefix(e["SIGNING_SECRET_ARN"], "arn:aws:secretsmanager:") {
		t.Errorf("ApiFunction SIGNING_SECRET_ARN = %q", e["SIGNING_SECRET_ARN"])
	}
	if v, ok := env(t, tpl, "AlertFunction", sample)["SIGNING_SECRET_ARN"]; ok {
		t.Errorf("AlertFunction has SIGNING_SECRET_ARN=%s but never signs", v)
	}
	for _, st := range statements(t, tpl, "AlertFunctionRole") {
		if slices.Contains(st.actions, "secretsmanager:GetSecretValue") {
			t.Error("AlertFunctionRole may read a secret it never uses")
		}
	}
	recVars := get(t, tpl.Resources["ReconcileFunction"].Properties, "Environment", "Variables").(map[string]any)
	want := map[string]any{"Fn::If": []any{"HasChannels", map[string]any{"Ref": "SigningSecretArn"}, map[string]any{"Ref": "AWS::NoValue"}}}
	if !reflect.DeepEqual(recVars["SIGNING_SECRET_ARN"], want) {
		t.Errorf("ReconcileFunction SIGNING_SECRET_ARN = %v, want it only with channels: %v", recVars["SIGNING_SECRET_ARN"], want)
	}
	for _, pol := range get(t, tpl.Resources["ReconcileFunctionRole"].Properties, "Policies").([]any) {
		for _, st := range get(t, pol, "PolicyDocument", "Statement").([]any) {
			branches, conditional := cfntemplate.Lookup(st, "Fn::If")
			if b, _ := json.Marshal(st); strings.Contains(string(b), "secretsmanager:") &&
				(!conditional || !strings.HasPrefix(branches.([]any)[0].(string), "HasChannels")) {
				t.Errorf("ReconcileFunctionRole reads the secret without channels: %s", b)
			}
		}
	}
	// The reader is read-only (RECONCILE_ACTIONS=read) and never sees a key; ReconcileFunction
	// serves every action.
	reader := env(t, tpl, "InDoubtReaderFunction", sample)
	if a, err := config.LoadReconcileActions(func(k string) string { return reader[k] }); err != nil || a != config.ReconcileRead {
		t.Errorf("InDoubtReaderFunction RECONCILE_ACTIONS=%q: %q, %v; want read", reader["RECONCILE_ACTIONS"], a, err)
	}
	if v, ok := reader["SIGNING_SECRET_ARN"]; ok {
		t.Errorf("InDoubtReaderFunction has SIGNING_SECRET_ARN=%s but never signs", v)
	}
	for _, st := range statements(t, tpl, "InDoubtReaderFunctionRole") {
		if slices.ContainsFunc(st.actions, func(a string) bool { return strings.HasPrefix(a, "secretsmanager:") || strings.HasPrefix(a, "kms:") }) {
			t.Errorf("InDoubtReaderFunctionRole statement %s reads a secret: %v", st.sid, st.actions)
		}
	}
	full := env(t, tpl, "ReconcileFunction", sample)
	if a, err := config.LoadReconcileActions(func(k string) string { return full[k] }); err != nil || a != config.ReconcileAll {
		t.Errorf("ReconcileFunction RECONCILE_ACTIONS=%q: %q, %v; want all", full["RECONCILE_ACTIONS"], a, err)
	}
	alert := env(t, tpl, "AlertFunction", sample)
	for _, k := range []string{"TABLE_NAME", "ALERT_TOPIC_ARN", "EVENT_BUS_NAME"} {
		if alert[k] == "" {
			t.Errorf("AlertFunction has no %s", k)
		}
	}

	api := tpl.Resources["ApiFunction"].Properties
	timeout, _ := strconv.Atoi(str(t, api, "Timeout"))
	integration := tpl.Resources["HttpApiIntegration"].Properties
	limit, _ := strconv.Atoi(str(t, integration, "TimeoutInMillis"))
	if limit > 30000 || timeout*1000 >= limit {
		t.Errorf("ApiFunction Timeout %d s must be below the integration's %d ms (at most 30000)", timeout, limit)
	}
	e := env(t, tpl, "ApiFunction", sample)
	margin, _ := strconv.Atoi(e["TRANSFER_DEADLINE_MARGIN_MS"])
	budget := tpl.Parameters["TransferTimeoutMs"]
	for _, k := range []string{"Default", "MaxValue"} {
		v, _ := cfntemplate.String(budget[k])
		ms, _ := strconv.Atoi(v)
		if ms <= 0 || ms+margin > timeout*1000 {
			t.Errorf("TransferTimeoutMs %s %d ms + margin %d ms exceeds the function's %d s", k, ms, margin, timeout)
		}
	}
	if e["TRANSFER_ORCHESTRATION_TIMEOUT_MS"] == "" || margin == 0 {
		t.Errorf("ApiFunction must set TRANSFER_ORCHESTRATION_TIMEOUT_MS and TRANSFER_DEADLINE_MARGIN_MS: %v", e)
	}
	// No key material in parameters or environment values: only the secret's ARN.
	for name, p := range tpl.Parameters {
		if n := strings.ToLower(name); strings.Contains(n, "seed") || (strings.Contains(n, "secret") && !strings.HasSuffix(n, "arn")) {
			t.Errorf("parameter %s looks like key material (%v)", name, p)
		}
	}
	for id := range functions {
		for k := range env(t, tpl, id, sample) {
			if strings.Contains(k, "SEED") || (strings.Contains(k, "SECRET") && !strings.HasSuffix(k, "_SECRET_ARN")) {
				t.Errorf("%s environment variable %s looks like key material", id, k)
			}
		}
	}
}

// Least privilege: no "*" or "service:*" action; "*" resources only for X-Ray's actions, which have
// no resource-level permissions.
func TestLeastPrivilege(t *testing.T) {
	tpl := load(t)
	roles := tpl.ResourcesOfType("AWS::IAM::Role")
	sort.Strings(roles)
	if want := []string{"AlertFunctionRole", "ApiFunctionRole", "InDoubtReaderFunctionRole", "ReconcileFunctionRole", "SubmitterFunctionRole", "WebhookFunctionRole"}; !slices.Equal(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	for _, id := range roles {
		if _, ok := tpl.Resources[id].Properties["ManagedPolicyArns"]; ok {
			t.Errorf("%s attaches managed policies; state each permission inline", id)
		}
		for _, st := range statements(t, tpl, id) {
			for _, a := range st.actions {
				if a == "*" || strings.HasSuffix(a, ":*") || !strings.Contains(a, ":") {
					t.Errorf("%s statement %s: action %q", id, st.sid, a)
				}
			}
			if st.resource == "*" && !allXRay(st.actions) {
				t.Errorf("%s statement %s: resource * for %v", id, st.sid, st.actions)
			}
		}
	}
	// The API and reconcile functions use a dynamo.Store: exactly the operations of dynamo.Client.
	// The alert function only lists the in-doubt index (alert.InDoubtLister: a Query).
	var want []string
	ct := reflect.TypeFor[dynamo.Client]()
	for i := range ct.NumMethod() {
		want = append(want, "dynamodb:"+ct.Method(i).Name)
	}
	// The functions that lease channels also book slots of the channel calendar
	// (dynamo.TicketClient), on its one item only.
	tt := reflect.TypeFor[dynamo.TicketClient]()
	var withTickets []string
	for i := range tt.NumMethod() {
		withTickets = append(withTickets, "dynamodb:"+tt.Method(i).Name)
	}
	withTickets = append(withTickets, want...)
	sort.Strings(withTickets)
	// SubmitterFunction also reads its event's items together (dynamo.BatchGetClient), transfer
	// items only; no other function does.
	bt := reflect.TypeFor[dynamo.BatchGetClient]()
	withBatchReads := slices.Clone(withTickets)
	for i := range bt.NumMethod() {
		withBatchReads = append(withBatchReads, "dynamodb:"+bt.Method(i).Name)
	}
	sort.Strings(withBatchReads)
	for _, st := range statements(t, tpl, "SubmitterFunctionRole") {
		if !slices.Contains(st.actions, "dynamodb:BatchGetItem") {
			continue
		}
		want := map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"transfer:*"}}}
		if len(st.actions) != 1 || !reflect.DeepEqual(st.condition, want) {
			t.Errorf("SubmitterFunctionRole statement %s: BatchGetItem beside %v, condition %v; want it alone, on %v", st.sid, st.actions, st.condition, want)
		}
	}
	withExpiry := slices.Sorted(slices.Values(append([]string{"dynamodb:UpdateItem"}, want...))) // TestReconcileUpdatesOnlyABatchsTTL
	for role, want := range map[string][]string{"ApiFunctionRole": withTickets, "SubmitterFunctionRole": withBatchReads, "ReconcileFunctionRole": withExpiry} {
		if got := dynamoActions(t, tpl, role); !slices.Equal(got, want) {
			t.Errorf("%s DynamoDB actions = %v, want %v", role, got, want)
		}
	}
	for _, role := range []string{"ApiFunctionRole", "SubmitterFunctionRole"} {
		for _, st := range statements(t, tpl, role) {
			if slices.Contains(st.actions, "dynamodb:UpdateItem") && (st.sid != "ChannelCalendar" && st.sid != "BatchItems" && (st.sid != "DailyLimits" || role != "ApiFunctionRole") || len(st.actions) != 1) {
				t.Errorf("%s statement %s allows UpdateItem beside %v; only ChannelCalendar, BatchItems (and the API's DailyLimits) may, alone", role, st.sid, st.actions)
			}
			// A batch's replacement by fee and its TTL (dynamo.Store.ReplaceBatch, ExpireBatch):
			// the batch items' envelope, version and TTL only, never a transfer item.
			batchItems := map[string]any{
				"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{transfer.BatchPrefix + "*"}},
				"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": []any{dynamo.AttrPK, "innerHash", "envelopeXdr", "outerHash",
					"outerHashes", "feeStroops", "version", dynamo.TTLAttribute}},
			}
			if st.sid == "BatchItems" && !reflect.DeepEqual(st.condition, batchItems) {
				t.Errorf("%s BatchItems condition = %v, want %v", role, st.condition, batchItems)
			}
		}
		var cond any
		for _, st := range statements(t, tpl, role) {
			if st.sid == "ChannelCalendar" {
				cond = st.condition
			}
		}
		want := map[string]any{"ForAllValues:StringEquals": map[string]any{"dynamodb:LeadingKeys": []any{dynamo.ChannelTicketsKey}}}
		if !reflect.DeepEqual(cond, want) {
			t.Errorf("%s ChannelCalendar condition = %v, want %v", role, cond, want)
		}
	}
	// The wallet index (a wallet's history) is queried by the API function alone, and only
	// queried; nothing queries the table itself.
	walletIndex := "/index/" + dynamo.WalletIndex
	for _, role := range roles {
		for _, st := range statements(t, tpl, role) {
			if !strings.Contains(st.resource, walletIndex) {
				continue
			}
			if role != "ApiFunctionRole" || !slices.Equal(st.actions, []string{"dynamodb:Query"}) || strings.Contains(st.resource, "/index/"+dynamo.InDoubtIndex) {
				t.Errorf("%s statement %s: %v on %s; only ApiFunctionRole may Query %s, in a statement of its own", role, st.sid, st.actions, st.resource, dynamo.WalletIndex)
			}
		}
	}
	if !slices.ContainsFunc(statements(t, tpl, "ApiFunctionRole"), func(st statement) bool {
		return strings.Contains(st.resource, walletIndex) && slices.Contains(st.actions, "dynamodb:Query")
	}) {
		t.Errorf("ApiFunctionRole may not Query %s", dynamo.WalletIndex)
	}
	for _, role := range roles {
		for _, st := range statements(t, tpl, role) {
			if slices.Contains(st.actions, "dynamodb:Query") && !strings.Contains(st.resource, "/index/") {
				t.Errorf("%s statement %s: Query on %s, not on an index", role, st.sid, st.resource)
			}
		}
	}
	if got := dynamoActions(t, tpl, "AlertFunctionRole"); !slices.Equal(got, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}) {
		t.Errorf("AlertFunctionRole DynamoDB actions = %v, want Query, PutItem for the lasting records, PutItem and UpdateItem for the give-backs, and UpdateItem and GetItem of a batch's page (stream reads aside; TestLimitsWriteOnlyTheirItems)", got)
	}
	// The alert function writes lasting records only in LastingRecords: a PutItem held to
	// partition keys starting with dynamo.ArchivePrefix, so it can never write a transfer item.
	found := false
	for _, st := range statements(t, tpl, "AlertFunctionRole") {
		if st.sid != "LastingRecords" {
			continue
		}
		found = true
		cond, _ := json.Marshal(st.condition)
		want := `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + dynamo.ArchivePrefix + `*"]}}`
		if !slices.Equal(st.actions, []string{"dynamodb:PutItem"}) || string(cond) != want {
			t.Errorf("AlertFunctionRole statement %s: %v under %s; want PutItem alone under %s", st.sid, st.actions, cond, want)
		}
	}
	if !found {
		t.Error("AlertFunctionRole has no statement LastingRecords")
	}
	// Settlement events: the alert function may put events on the stack's bus only; the webhook
	// function uses nothing of EventBridge.
	for role, want := range map[string]string{
		"AlertFunctionRole": `events:PutEvents on {"Fn::GetAtt":["SettlementEventBus","Arn"]}`,
	} {
		var got []string
		for _, st := range statements(t, tpl, role) {
			for _, a := range st.actions {
				if strings.HasPrefix(a, "events:") {
					got = append(got, a+" on "+st.resource)
				}
			}
		}
		if !slices.Equal(got, []string{want}) {
			t.Errorf("%s EventBridge permissions = %v, want only %s", role, got, want)
		}
	}
	// The reader reads: GetItem (get, dynamo.Store.Get) and Query (list, ListInDoubt), nothing else.
	if got := dynamoActions(t, tpl, "InDoubtReaderFunctionRole"); !slices.Equal(got, []string{"dynamodb:GetItem", "dynamodb:Query"}) {
		t.Errorf("InDoubtReaderFunctionRole DynamoDB actions = %v, want only GetItem and Query", got)
	}
}

type statement struct {
	sid      string
	actions  []string
	resource string // the resource as JSON, or "*"
	// condition is the statement's Condition as parsed (nil without one).
	condition any
}

func statements(t *testing.T, tpl *cfntemplate.Template, role string) []statement {
	t.Helper()
	var out []statement
	for _, pol := range get(t, tpl.Resources[role].Properties, "Policies").([]any) {
		for _, st := range get(t, pol, "PolicyDocument", "Statement").([]any) {
			if branches, ok := cfntemplate.Lookup(st, "Fn::If"); ok {
				st = branches.([]any)[1] // the condition's true branch; the false one is AWS::NoValue
			}
			if effect, _ := cfntemplate.Lookup(st, "Effect"); effect != "Allow" {
				t.Errorf("%s: statement %v is not Allow", role, st)
			}
			s := statement{}
			if sid, ok := cfntemplate.Lookup(st, "Sid"); ok {
				s.sid, _ = sid.(string)
			}
			s.condition, _ = cfntemplate.Lookup(st, "Condition")
			switch a := get(t, st, "Action").(type) {
			case string:
				s.actions = []string{a}
			case []any:
				for _, x := range a {
					s.actions = append(s.actions, x.(string))
				}
			}
			res := get(t, st, "Resource")
			if r, ok := res.(string); ok && r == "*" {
				s.resource = "*"
			} else {
				b, _ := json.Marshal(res)
				s.resource = string(b)
			}
			out = append(out, s)
		}
	}
	return out
}

func allXRay(actions []string) bool {
	for _, a := range actions {
		if !strings.HasPrefix(a, "xray:Put") {
			return false
		}
	}
	return true
}

func dynamoActions(t *testing.T, tpl *cfntemplate.Template, role string) []string {
	var out []string
	for _, st := range statements(t, tpl, role) {
		for _, a := range st.actions {
			if strings.HasPrefix(a, "dynamodb:") && !strings.Contains(a, "Stream") && a != "dynamodb:GetRecords" && a != "dynamodb:GetShardIterator" {
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out) // one action may be allowed on several resources (two indexes)
}

// The stream mapping filters on the status, reports partial failures, bisects, retries a bounded
// number of times and sends what it gives up on to the queue that has an alarm.
func TestStreamMappingScheduleAndAlarms(t *testing.T) {
	tpl := load(t)
	ev := get(t, tpl.Resources["AlertFunction"].Properties, "Events", "TransferChanges")
	if str(t, ev, "Type") != "DynamoDB" {
		t.Fatalf("AlertFunction's event is %v", ev)
	}
	p := get(t, ev, "Properties")
	if !reflect.DeepEqual(get(t, p, "Stream"), map[string]any{"Fn::GetAtt": []any{"TransfersTable", "StreamArn"}}) {
		t.Errorf("stream = %v", get(t, p, "Stream"))
	}
	if !reflect.DeepEqual(get(t, p, "FunctionResponseTypes"), []any{"ReportBatchItemFailures"}) || str(t, p, "BisectBatchOnFunctionError") != "true" {
		t.Error("the mapping must report batch item failures and bisect on error")
	}
	if n, _ := strconv.Atoi(str(t, p, "MaximumRetryAttempts")); n < 1 || n > 10 {
		t.Errorf("MaximumRetryAttempts = %d, want 1..10", n)
	}
	if !reflect.DeepEqual(get(t, p, "DestinationConfig", "OnFailure", "Destination"), map[string]any{"Fn::GetAtt": []any{"AlertFailureQueue", "Arn"}}) {
		t.Error("on-failure destination is not AlertFailureQueue")
	}
	// Each filter is valid JSON (streamFilters). Together they pass every uncharged record the
	// handler acts on (an alert: in_doubt entering or leaving; an event: SettlementEventOf) and
	// hold back the claim, the attach, take-overs and the TTL's removals of settled items.
	passesCharged := streamFilters(t, p)
	passes := func(old, next transfer.Status) bool { return passesCharged(old, next, false) }
	statuses := []transfer.Status{"", transfer.StatusInFlight, transfer.StatusReplayable, transfer.StatusRejected, transfer.StatusInDoubt}
	for _, old := range statuses {
		for _, next := range statuses {
			if old == "" && next == "" {
				continue
			}
			var o, n *transfer.Record
			if old != "" {
				o = &transfer.Record{StoreKey: "transfer:k", Status: old}
			}
			if next != "" {
				n = &transfer.Record{StoreKey: "transfer:k", Status: next}
			}
			_, event := alert.SettlementEventOf(&events.DynamoDBEventRecord{}, o, n)
			alerts := (old == transfer.StatusInDoubt) != (next == transfer.StatusInDoubt)
			if (event || alerts) && !passes(old, next) {
				t.Errorf("the filters hold back %q -> %q, which the handler acts on (event %v, alert %v)", old, next, event, alerts)
			}
		}
	}
	for _, held := range [][2]transfer.Status{
		{"", transfer.StatusInFlight}, {transfer.StatusInFlight, transfer.StatusInFlight}, {transfer.StatusInFlight, ""},
	} {
		if passes(held[0], held[1]) {
			t.Errorf("the filters pass %q -> %q, which the handler ignores", held[0], held[1])
		}
	}

	sweep := get(t, tpl.Resources["ReconcileFunction"].Properties, "Events", "Sweep")
	if str(t, sweep, "Type") != "Schedule" || str(t, sweep, "Properties", "Schedule") != "rate(1 minute)" {
		t.Errorf("sweep schedule = %v", sweep)
	}
	var input map[string]any
	if err := json.Unmarshal([]byte(str(t, sweep, "Properties", "Input")), &input); err != nil || !reflect.DeepEqual(input, map[string]any{"action": "sweep"}) {
		t.Errorf("sweep input = %v (%v)", input, err)
	}

	alarm := tpl.Resources["InDoubtAlarm"].Properties
	if str(t, alarm, "Namespace") != metrics.Namespace || str(t, alarm, "MetricName") != metrics.InDoubt ||
		str(t, alarm, "ComparisonOperator") != "GreaterThanThreshold" || str(t, alarm, "Threshold") != "0" {
		t.Errorf("InDoubtAlarm = %v", alarm)
	}
	if _, ok := alarm["Dimensions"]; ok {
		t.Error("InDoubtAlarm has dimensions; the gauge is published without any")
	}
	for _, id := range []string{"InDoubtAlarm", "AlertFunctionErrorsAlarm", "AlertFailureQueueAlarm"} {
		if !reflect.DeepEqual(get(t, tpl.Resources[id].Properties, "AlarmActions"), []any{map[string]any{"Ref": "AlertTopic"}}) {
			t.Errorf("%s does not notify AlertTopic", id)
		}
	}
	for _, out := range []string{"ApiUrl", "TableName", "ApiFunctionName", "AlertFunctionName", "ReconcileFunctionName", "AlertTopicArn"} {
		if _, ok := tpl.Outputs[out]; !ok {
			t.Errorf("output %s missing", out)
		}
	}
}

// The API's routes are the handler's, each with the parameterised authorization.
func TestHTTPAPI(t *testing.T) {
	tpl := load(t)
	var keys []string
	for _, id := range tpl.ResourcesOfType("AWS::ApiGatewayV2::Route") {
		p := tpl.Resources[id].Properties
		keys = append(keys, str(t, p, "RouteKey"))
		if !reflect.DeepEqual(get(t, p, "AuthorizationType"), map[string]any{"Fn::If": []any{"IamAuthorization", "AWS_IAM", "NONE"}}) {
			t.Errorf("route %s authorization = %v", id, get(t, p, "AuthorizationType"))
		}
	}
	sort.Strings(keys)
	want := []string{"$default", "DELETE /wallets/{walletAddress}/transfers/{idempotencyKey}", "GET /wallets/{walletAddress}/transfers",
		"GET /wallets/{walletAddress}/transfers/{idempotencyKey}", "POST /transfers"}
	if !slices.Equal(keys, want) {
		t.Errorf("routes = %v, want %v", keys, want)
	}
	if p := tpl.Parameters["ApiAuthorization"]; p["Default"] != "AWS_IAM" {
		t.Errorf("ApiAuthorization defaults to %v, want AWS_IAM", p["Default"])
	}
}

// findInMap is the template's !FindInMap [Capacity, !Ref ChannelCount, key].
func findInMap(key string) map[string]any {
	return map[string]any{"Fn::FindInMap": []any{"Capacity", map[string]any{"Ref": "ChannelCount"}, key}}
}

// capacity is the formula of template.yaml's Mappings: Capacity and README.md's "Capacity", for
// channels channel accounts: S sources (each channel, or the vault alone) land one transaction
// each per ledger of ledgerSeconds; the gate admits twice that (rate), a ledger of it at once
// (burst); the API function may run every call the gate admits in one ledger (all of them wait
// at most about a ledger for a source, then 503 CHANNELS_BUSY) plus one per leased source.
func capacity(channels int) (reserved, rate, burst int) {
	const ledgerSeconds = 5
	s := max(channels, 1)
	rate = (2*s + ledgerSeconds - 1) / ledgerSeconds // ceil(2S/L)
	burst = rate * ledgerSeconds
	return s + 2*burst, rate, burst
}

// The API function's reserved concurrency and the API's throttling come from ChannelCount through
// the Capacity mapping, whose every row is the formula's; AlertFunction and ReconcileFunction
// hold concurrency of their own, so a burst on the API can never starve them; and the largest
// allowed value still fits the default account quota.
func TestCapacityFromChannelCount(t *testing.T) {
	tpl := load(t)
	rows := tpl.Mappings["Capacity"]
	allowed, ok := tpl.Parameters["ChannelCount"]["AllowedValues"].([]any)
	if !ok || len(allowed) == 0 {
		t.Fatalf("ChannelCount has no AllowedValues (%v): every value needs its Capacity row", tpl.Parameters["ChannelCount"])
	}
	if d, _ := cfntemplate.String(tpl.Parameters["ChannelCount"]["Default"]); !slices.ContainsFunc(allowed, func(v any) bool { s, _ := cfntemplate.String(v); return s == d }) {
		t.Errorf("ChannelCount's default %s is not an allowed value", d)
	}
	if len(rows) != len(allowed) {
		t.Errorf("Capacity has %d rows for %d allowed ChannelCount values", len(rows), len(allowed))
	}
	const alert, reconcile, reader = "AlertFunction", "ReconcileFunction", "InDoubtReaderFunction"
	own := map[string]int{}
	for _, id := range []string{alert, reconcile, reader} {
		n, err := strconv.Atoi(str(t, tpl.Resources[id].Properties, "ReservedConcurrentExecutions"))
		if err != nil || n < 1 {
			t.Errorf("%s ReservedConcurrentExecutions = %v, want a fixed reservation of at least 1", id, get(t, tpl.Resources[id].Properties, "ReservedConcurrentExecutions"))
		}
		own[id] = n
	}
	if own[reconcile] < 2 {
		t.Errorf("ReconcileFunction reserves %d: an operator's action would wait for the sweep", own[reconcile])
	}
	// Lambda keeps 100 of the account's concurrency (1000 by default) unreserved.
	const accountQuota, unreserved = 1000, 100
	for _, v := range allowed {
		key, _ := cfntemplate.String(v)
		channels, err := strconv.Atoi(key)
		if err != nil || channels < 0 {
			t.Errorf("ChannelCount allows %v", v)
			continue
		}
		row, ok := rows[key]
		if !ok {
			t.Errorf("ChannelCount %d has no Capacity row", channels)
			continue
		}
		reserved, rate, burst := capacity(channels)
		for k, want := range map[string]int{"ApiReservedConcurrency": reserved, "ApiThrottlingRateLimit": rate, "ApiThrottlingBurstLimit": burst} {
			if got, _ := cfntemplate.String(row[k]); got != strconv.Itoa(want) {
				t.Errorf("Capacity[%d][%s] = %v, the formula gives %d", channels, k, row[k], want)
			}
		}
		if len(row) != 3 {
			t.Errorf("Capacity[%d] = %v, want exactly the three values", channels, row)
		}
		// What the formula promises, said once more independently of it: the gate admits at
		// least twice what the sources land per ledger (S per 5 s), and the function can run
		// every call the gate admits within one ledger's wait besides one per leased source.
		s := max(channels, 1)
		if rate*5 < 2*s || burst < rate || reserved < s+burst+rate*5 {
			t.Errorf("Capacity[%d] = reserved %d, rate %d/s, burst %d: too small for %d sources", channels, reserved, rate, burst, s)
		}
		if total := reserved + own[alert] + own[reconcile] + own[reader]; total > accountQuota-unreserved {
			t.Errorf("ChannelCount %d reserves %d of the default quota's %d", channels, total, accountQuota-unreserved)
		}
	}
	for _, extra := range []string{"-1", "1000"} {
		if _, ok := rows[extra]; ok {
			t.Errorf("Capacity has a row for %s", extra)
		}
	}
	if got := get(t, tpl.Resources["ApiFunction"].Properties, "ReservedConcurrentExecutions"); !reflect.DeepEqual(got, findInMap("ApiReservedConcurrency")) {
		t.Errorf("ApiFunction ReservedConcurrentExecutions = %v, want %v", got, findInMap("ApiReservedConcurrency"))
	}
	stage := tpl.Resources["HttpApiStage"].Properties
	for k, col := range map[string]string{"ThrottlingRateLimit": "ApiThrottlingRateLimit", "ThrottlingBurstLimit": "ApiThrottlingBurstLimit"} {
		if got := get(t, stage, "DefaultRouteSettings", k); !reflect.DeepEqual(got, findInMap(col)) {
			t.Errorf("HttpApiStage DefaultRouteSettings.%s = %v, want %v", k, got, findInMap(col))
		}
	}
	// No route has throttling of its own that would bypass the derived default.
	if rs, ok := stage["RouteSettings"]; ok {
		t.Errorf("HttpApiStage RouteSettings = %v: every route takes the derived default", rs)
	}
}

// The README's deploy section names every parameter the template asks for, with its default.
func TestReadmeNamesEveryParameter(t *testing.T) {
	tpl := load(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	deploy, _, _ := strings.Cut(text[strings.Index(text, "## Deploying to AWS"):], "\n## ")
	if len(tpl.Parameters) < 10 {
		t.Fatalf("only %d parameters parsed", len(tpl.Parameters))
	}
	for name := range tpl.Parameters {
		if !strings.Contains(deploy, "`"+name+"`") {
			t.Errorf("README's deploy section does not name the parameter %s", name)
		}
	}
}

// The two operator roles (README.md, "Operator roles"): InDoubtReaderPolicy may invoke only the
// read-only function, ReconcileOperatorPolicy both; nothing else in the template lets a person
// invoke either. The optional trail records the invocations of both, data events only.
func TestOperatorRoles(t *testing.T) {
	tpl := load(t)
	policies := tpl.ResourcesOfType("AWS::IAM::ManagedPolicy")
	sort.Strings(policies)
	if want := []string{"InDoubtReaderPolicy", "ReconcileOperatorPolicy"}; !slices.Equal(policies, want) {
		t.Fatalf("managed policies = %v, want %v", policies, want)
	}
	arn := func(id string) string { return `{"Fn::GetAtt":["` + id + `","Arn"]}` }
	for id, want := range map[string]string{
		"InDoubtReaderPolicy":     arn("InDoubtReaderFunction"),
		"ReconcileOperatorPolicy": "[" + arn("ReconcileFunction") + "," + arn("InDoubtReaderFunction") + "]",
	} {
		sts := get(t, tpl.Resources[id].Properties, "PolicyDocument", "Statement").([]any)
		if len(sts) != 1 {
			t.Errorf("%s has %d statements, want 1", id, len(sts))
			continue
		}
		res, _ := json.Marshal(get(t, sts[0], "Resource"))
		if str(t, sts[0], "Effect") != "Allow" || str(t, sts[0], "Action") != "lambda:InvokeFunction" || string(res) != want {
			t.Errorf("%s = %v, want Allow lambda:InvokeFunction on %s", id, sts[0], want)
		}
	}
	for _, out := range []string{"InDoubtReaderFunctionName", "InDoubtReaderPolicyArn", "ReconcileOperatorPolicyArn"} {
		if _, ok := tpl.Outputs[out]; !ok {
			t.Errorf("output %s missing", out)
		}
	}
	for _, id := range tpl.ResourcesOfType("AWS::Lambda::Permission") {
		if fn, _ := json.Marshal(get(t, tpl.Resources[id].Properties, "FunctionName")); strings.Contains(string(fn), "ReconcileFunction") || strings.Contains(string(fn), "InDoubtReaderFunction") {
			t.Errorf("%s grants invoking an operator function outside the two policies: %s", id, fn)
		}
	}

	if p := tpl.Parameters["OperatorAuditTrail"]; p["Default"] != "false" {
		t.Errorf("OperatorAuditTrail defaults to %v, want false (the trail is optional)", p["Default"])
	}
	trails := tpl.ResourcesOfType("AWS::CloudTrail::Trail")
	if len(trails) != 1 {
		t.Fatalf("trails = %v, want one", trails)
	}
	trail := tpl.Resources[trails[0]]
	if trail.Condition != "HasOperatorAuditTrail" || tpl.Resources["OperatorAuditBucket"].Condition != "HasOperatorAuditTrail" {
		t.Errorf("the trail (%q) and its bucket (%q) must depend on HasOperatorAuditTrail", trail.Condition, tpl.Resources["OperatorAuditBucket"].Condition)
	}
	sels := get(t, trail.Properties, "EventSelectors").([]any)
	if len(sels) != 1 || str(t, sels[0], "IncludeManagementEvents") != "false" {
		t.Fatalf("EventSelectors = %v, want one, data events only", sels)
	}
	res, _ := json.Marshal(get(t, sels[0], "DataResources"))
	if want := `[{"Type":"AWS::Lambda::Function","Values":[` + arn("ReconcileFunction") + "," + arn("InDoubtReaderFunction") + `]}]`; string(res) != want {
		t.Errorf("DataResources = %s, want %s", res, want)
	}
}

// The webhook function reads its signing secret and works its own queue, nothing else: no table,
// no bus, no other secret; the rule alone may put events on the queue.
func TestWebhookFunctionReadsOnlyItsSecretAndQueue(t *testing.T) {
	tpl := load(t)
	var got []string
	for _, st := range statements(t, tpl, "WebhookFunctionRole") {
		for _, a := range st.actions {
			if strings.HasPrefix(a, "logs:") || strings.HasPrefix(a, "xray:") {
				continue
			}
			got = append(got, a+" on "+st.resource)
		}
	}
	sort.Strings(got)
	want := []string{
		`secretsmanager:GetSecretValue on {"Ref":"WebhookSigningSecretArn"}`,
		`sqs:ChangeMessageVisibility on {"Fn::GetAtt":["SettlementWebhookQueue","Arn"]}`,
		`sqs:DeleteMessage on {"Fn::GetAtt":["SettlementWebhookQueue","Arn"]}`,
		`sqs:GetQueueAttributes on {"Fn::GetAtt":["SettlementWebhookQueue","Arn"]}`,
		`sqs:ReceiveMessage on {"Fn::GetAtt":["SettlementWebhookQueue","Arn"]}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("WebhookFunctionRole = %v, want %v", got, want)
	}
	e := env(t, tpl, "WebhookFunction", map[string]string{"WebhookEndpoint": "https://hooks.example.com/stellar",
		"WebhookSigningSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf"})
	if _, err := config.LoadWebhook(func(k string) string { return e[k] }); err != nil {
		t.Errorf("WebhookFunction's environment %v: %v", e, err)
	}
	q := tpl.Resources["SettlementWebhookQueue"].Properties
	if n, _ := cfntemplate.Lookup(q, "RedrivePolicy", "maxReceiveCount"); fmt.Sprint(n) != fmt.Sprint(webhook.MaxAttempts) {
		t.Errorf("SettlementWebhookQueue maxReceiveCount = %v, want webhook.MaxAttempts %d", n, webhook.MaxAttempts)
	}
}
