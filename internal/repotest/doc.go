// Package repotest holds the repository to its own rules, in tests that read its files:
//
//   - it explains itself: no file cites a document that a clone of the repository does not hold
//     (design notes, numbered source documents or seeds kept outside it; the design lives in
//     README.md and the packages' doc.go files: README.md, "Layout");
//   - no tracked file is over 1 MiB (build outputs never enter git);
//   - the house: internal/transfer, the domain, imports no AWS, Stellar or other internal package,
//     and the adapters internal/dynamo and internal/stellar never import each other; inside
//     internal/stellar the imports point one way, the ledger to the transaction sources
//     (internal/stellar/sources) to the signing keys (internal/stellar/signing), never back up
//     (repotest_test.go, houseImportRules);
//   - each file one idea: no Go file is longer than MaxGoFileLines (length_test.go);
//   - internal/transfer/transfertest, the domain's importable test helpers, imports only
//     internal/transfer and the standard library (transfertest_test.go);
//   - comments say why, never history: no text file but fixtures (testdata), vendored code and
//     lock files refers to an issue by number ("issue N", "issues #N"), unless the word just
//     before it names another project's owner/repo, a cited source (issues_test.go).
//   - README.md's links to its own sections land: every [text](#anchor) names a heading (by
//     GitHub's slug) or an <a id> (readme_test.go).
//
// The files checked are those git tracks plus the untracked ones it does not ignore (so a file is
// caught before its commit); without git, every file under the root but .git, .ci/venv,
// .ci/bin, .ci/work, .aws-sam, .build and node_modules.
//
// The package has no non-test code.
package repotest
