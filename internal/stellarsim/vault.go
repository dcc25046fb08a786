package stellarsim

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// VaultHost is a ContractHost that runs vault contracts: a ledger of
// per-wallet balances kept by an operator.
//
// # The contract
//
// A vault has an operator (a G... account) and two functions,
// deposit(wallet: Address, amount: i128) and withdraw(wallet: Address,
// amount: i128) (names configurable per vault), both returning the wallet's
// new balance as i128, plus balance(wallet: Address) -> i128. Amounts are in
// the asset's smallest unit. deposit and withdraw call require_auth on the
// operator, which the operation source satisfies with a source-account
// credential (SOROBAN_CREDENTIALS_SOURCE_ACCOUNT): the operation's source
// must be the operator and the operation must carry the auth entry that
// simulation recorded. Contract errors: #1 InsufficientBalance (withdraw
// above the balance), #2 InvalidAmount (amount <= 0).
//
// The vault is the book of record only: deposit credits and withdraw debits
// the wallet's balance in the contract; no classic asset moves (the operator
// settles the underlying asset elsewhere). Wallets may be accounts (G...) or
// contracts (C...).
//
// # Storage
//
// Every vault has a persistent contract instance entry (its executable is
// one shared stand-in Wasm, a persistent ContractCode entry) and one
// persistent ContractData entry per wallet, keyed by
// Vec[Symbol("Balance"), Address(wallet)] and holding an i128. Each entry
// has a TTL (liveUntilLedgerSeq): created or restored entries live
// MinPersistentTTL ledgers, and the contract extends a balance entry to that
// many ledgers whenever it writes it. An entry whose liveUntil is below the
// ledger being applied (or simulated) is archived: simulation answers with a
// transaction data that restores it, and the invocation restores it
// (protocol 23: the entry moves to the read-write footprint and its index is
// listed in archivedSorobanEntries). A RestoreFootprint operation still
// brings an entry back explicitly. With Options.Protocol22Restore the
// protocol 22 flow runs instead: simulation answers a restorePreamble and an
// invocation whose footprint holds an archived entry fails with
// ENTRY_ARCHIVED.
//
// # Resources and fees
//
// Simulation reports the footprint, the instructions, the bytes read and
// written, and a resource fee from a fixed stand-in schedule (resourceFee,
// fees.go): a non-refundable part from the declared resources and a
// refundable rent for each entry created or restored, so an invocation that
// restores costs more. At submission the declared resource fee must cover
// the non-refundable part (else txSOROBAN_INVALID); apply recomputes the
// resources and fails with RESOURCE_LIMIT_EXCEEDED when the declared ones
// are short, INSUFFICIENT_REFUNDABLE_FEE when the rent does not fit in the
// rest of the declared fee, and TRAPPED when the contract touches an entry
// outside the footprint, the auth entry is missing, or the contract errs.
// The unused refundable fee goes back to the fee source.
//
// Lock order: the network's lock, then the host's.
type VaultHost struct {
	opts VaultOptions

	mu       sync.Mutex
	net      *Network
	vaults   map[xdr.ContractId]*vault
	entries  map[string]*contractEntry // by base64 LedgerKey
	byTTLKey map[xdr.Hash]string       // TTL key hash -> base64 LedgerKey
	codeHash xdr.Hash
	undo     map[uint32]map[string]*contractEntry // by ledger: entries as they were before it changed them
	undoSeqs []uint32                             // ledgers with an undo log, ascending
	// background are the vaults the congestion profile's Soroban traffic calls, by operator
	// (vault_background.go).
	background map[string]*vault
}

// VaultOptions configures NewVaultHost.
type VaultOptions struct {
	// MinPersistentTTL is how many ledgers a new or restored persistent
	// entry lives (its liveUntil is ledger + MinPersistentTTL - 1), default
	// 120960 (7 days of 5-second ledgers).
	MinPersistentTTL uint32
}

// VaultSpec describes one vault to deploy.
type VaultSpec struct {
	Operator   string   // G... account whose source-account credential authorizes deposit and withdraw
	Salt       [32]byte // with the operator, picks the contract ID; zero means random
	DepositFn  string   // default "deposit"
	WithdrawFn string   // default "withdraw"
}

// VaultBalance is one wallet's entry in a vault.
type VaultBalance struct {
	Exists       bool   `json:"exists"`
	Amount       int64  `json:"amount,string"` // smallest unit of the asset
	LiveUntil    uint32 `json:"live_until"`    // ledger sequence the entry is live until (inclusive)
	Archived     bool   `json:"archived"`      // LiveUntil is below the latest ledger
	LastModified uint32 `json:"last_modified"`
}

// Vault contract error codes (Error(Contract, #n)).
const (
	VaultErrInsufficientBalance = 1
	VaultErrInvalidAmount       = 2
)

const defaultMinPersistentTTL = 120960

// vaultWasm is the stand-in executable every vault runs.
var vaultWasm = []byte("\x00asm\x01\x00\x00\x00stellarsim-vault")

type vault struct {
	id         xdr.ContractId
	addr       xdr.ScAddress
	strkey     string
	operator   string
	depositFn  string
	withdrawFn string
}

type contractEntry struct {
	key          xdr.LedgerKey
	data         xdr.LedgerEntryData
	lastModified uint32
	liveUntil    uint32
}

// NewVaultHost returns a host with no vaults; pass it as Options.Contracts,
// then DeployVault.
func NewVaultHost(opts VaultOptions) *VaultHost {
	if opts.MinPersistentTTL == 0 {
		opts.MinPersistentTTL = defaultMinPersistentTTL
	}
	return &VaultHost{
		opts:     opts,
		vaults:   map[xdr.ContractId]*vault{},
		entries:  map[string]*contractEntry{},
		byTTLKey: map[xdr.Hash]string{},
		codeHash: sha256.Sum256(vaultWasm),
		undo:     map[uint32]map[string]*contractEntry{},
	}
}

// attach is called by Start.
func (h *VaultHost) attach(n *Network) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.net = n
}

// DeployVault creates a vault contract directly in the ledger (like genesis:
// no transaction) and returns its C... address. The contract ID is derived as
// the network derives one deployed by the operator with the salt.
func (h *VaultHost) DeployVault(spec VaultSpec) (string, error) {
	if !strkey.IsValidEd25519PublicKey(spec.Operator) {
		return "", errors.New("stellarsim: vault operator must be a G... account")
	}
	if spec.DepositFn == "" {
		spec.DepositFn = "deposit"
	}
	if spec.WithdrawFn == "" {
		spec.WithdrawFn = "withdraw"
	}
	if spec.DepositFn == spec.WithdrawFn || spec.DepositFn == "balance" || spec.WithdrawFn == "balance" {
		return "", errors.New("stellarsim: vault function names must differ from each other and from balance")
	}
	if spec.Salt == ([32]byte{}) {
		if _, err := rand.Read(spec.Salt[:]); err != nil {
			return "", fmt.Errorf("stellarsim: salt: %w", err)
		}
	}
	h.mu.Lock()
	n := h.net
	h.mu.Unlock()
	if n == nil {
		return "", errors.New("stellarsim: the vault host is not attached to a network (pass it as Options.Contracts to Start)")
	}
	latest := n.LatestLedger().Sequence
	h.mu.Lock()
	defer h.mu.Unlock()
	v, err := h.deployLocked(n.Passphrase(), spec, latest)
	if err != nil {
		return "", err
	}
	return v.strkey, nil
}

// deployLocked creates the vault spec describes (its names filled) as of ledger latest: its
// instance entry, and the shared code entry if missing. Callers hold h.mu.
func (h *VaultHost) deployLocked(passphrase string, spec VaultSpec, latest uint32) (*vault, error) {
	op, err := accountScAddress(spec.Operator)
	if err != nil {
		return nil, err
	}
	netID := sha256.Sum256([]byte(passphrase))
	pre := xdr.HashIdPreimage{Type: xdr.EnvelopeTypeEnvelopeTypeContractId, ContractId: &xdr.HashIdPreimageContractId{
		NetworkId: netID,
		ContractIdPreimage: xdr.ContractIdPreimage{Type: xdr.ContractIdPreimageTypeContractIdPreimageFromAddress,
			FromAddress: &xdr.ContractIdPreimageFromAddress{Address: op, Salt: xdr.Uint256(spec.Salt)}},
	}}
	raw, err := pre.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("stellarsim: contract id preimage: %w", err)
	}
	id := xdr.ContractId(sha256.Sum256(raw))
	cid := id
	v := &vault{id: id, addr: xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeContract, ContractId: &cid},
		operator: spec.Operator, depositFn: spec.DepositFn, withdrawFn: spec.WithdrawFn}
	if v.strkey, err = strkey.Encode(strkey.VersionByteContract, id[:]); err != nil {
		return nil, fmt.Errorf("stellarsim: contract address: %w", err)
	}
	if _, ok := h.vaults[id]; ok {
		return nil, fmt.Errorf("stellarsim: vault %s: %w", v.strkey, ErrExists)
	}
	live := latest + h.opts.MinPersistentTTL - 1
	codeKey := codeLedgerKey(h.codeHash)
	if _, ok := h.entries[keyString(codeKey)]; !ok {
		h.putLocked(codeKey, xdr.LedgerEntryData{Type: xdr.LedgerEntryTypeContractCode,
			ContractCode: &xdr.ContractCodeEntry{Hash: h.codeHash, Code: vaultWasm}}, latest, live)
	}
	inst := v.instanceData(h.codeHash)
	h.putLocked(instanceLedgerKey(v.addr), inst, latest, live)
	h.vaults[id] = v
	return v, nil
}

// Balance returns wallet's entry in the vault contractID (C...).
func (h *VaultHost) Balance(contractID, wallet string) (VaultBalance, error) {
	key, err := VaultBalanceKey(contractID, wallet)
	if err != nil {
		return VaultBalance{}, err
	}
	latest := h.latest()
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[keyString(key)]
	if e == nil {
		return VaultBalance{}, nil
	}
	amt, _ := i128ToInt64(e.data.ContractData.Val)
	return VaultBalance{Exists: true, Amount: amt, LiveUntil: e.liveUntil, Archived: e.liveUntil < latest, LastModified: e.lastModified}, nil
}

// SetBalanceLiveUntil sets the TTL of wallet's balance entry; a ledger below
// the latest archives it (what the network does once the TTL runs out).
func (h *VaultHost) SetBalanceLiveUntil(contractID, wallet string, ledger uint32) error {
	key, err := VaultBalanceKey(contractID, wallet)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[keyString(key)]
	if e == nil {
		return fmt.Errorf("stellarsim: balance of %s in %s: %w", wallet, contractID, ErrNotFound)
	}
	e.liveUntil = ledger
	return nil
}

// ArchiveBalance archives wallet's balance entry now (TTL one below the latest ledger).
func (h *VaultHost) ArchiveBalance(contractID, wallet string) error {
	latest := h.latest()
	return h.SetBalanceLiveUntil(contractID, wallet, max(latest, 1)-1)
}

func (h *VaultHost) latest() uint32 {
	h.mu.Lock()
	n := h.net
	h.mu.Unlock()
	if n == nil {
		return 1
	}
	return n.LatestLedger().Sequence
}

func (v *vault) instanceData(codeHash xdr.Hash) xdr.LedgerEntryData {
	op, _ := accountScAddress(v.operator)
	storage := xdr.ScMap{
		{Key: symbol("DepositFn"), Val: symbol(v.depositFn)},
		{Key: symbol("Operator"), Val: addressVal(op)},
		{Key: symbol("WithdrawFn"), Val: symbol(v.withdrawFn)},
	}
	hash := codeHash
	inst := xdr.ScContractInstance{Executable: xdr.ContractExecutable{Type: xdr.ContractExecutableTypeContractExecutableWasm, WasmHash: &hash},
		Storage: &storage}
	return xdr.LedgerEntryData{Type: xdr.LedgerEntryTypeContractData, ContractData: &xdr.ContractDataEntry{
		Contract: v.addr, Key: xdr.ScVal{Type: xdr.ScValTypeScvLedgerKeyContractInstance},
		Durability: xdr.ContractDataDurabilityPersistent,
		Val:        xdr.ScVal{Type: xdr.ScValTypeScvContractInstance, Instance: &inst},
	}}
}

// putLocked stores an entry. Callers hold h.mu.
func (h *VaultHost) putLocked(key xdr.LedgerKey, data xdr.LedgerEntryData, modified, liveUntil uint32) {
	ks := keyString(key)
	h.entries[ks] = &contractEntry{key: key, data: data, lastModified: modified, liveUntil: liveUntil}
	h.byTTLKey[ttlKeyHash(key)] = ks
}
