// Package dynamo implements transfer.Store on Amazon DynamoDB with aws-sdk-go-v2 (DESIGN.md
// section 3): one table, partition key "pk" (S), every transition a conditional write, and a
// sparse global secondary index "gsi1" that holds exactly the in_doubt items.
//
// The table's definition lives in TableDefinition; EnsureTable creates it when missing. The item
// layout (attribute names, types and units) is documented on the item type in item.go.
//
// Counting requests: the package keeps no global state. Wrap the client handed to New (and to
// EnsureTable) with a decorator; dynamotest.CountingClient does that and is what the tests and
// benchmarks use.
package dynamo
