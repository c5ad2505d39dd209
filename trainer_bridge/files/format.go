package files

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// The hand-off format, version 1 (docs/trainer-files.md). A step of one role
// is a directory holding three files.
const (
	// FormatName and FormatVersion identify the format in the manifest.
	FormatName    = "mgrpo-trainer-files"
	FormatVersion = 1

	// ManifestFile names the files, counts and checksums; it is written
	// last, so a directory with a manifest is complete.
	ManifestFile = "manifest.json"
	// IndexFile holds one JSON object per batch entry, in batch order; its
	// "seq" member is the entry's sequence in SequencesFile.
	IndexFile = "index.jsonl"
	// SequencesFile holds each distinct token sequence once (see
	// SequencesMagic for its layout).
	SequencesFile = "sequences.bin"
)

// SequencesMagic opens SequencesFile. Records follow it, one per distinct
// sequence, all integers little-endian:
//
//	uint32 n, uint32 m, n × int32 input_ids, n × int8 loss_mask, m × float64 logprobs
//
// When m < n the logprobs are those of the tokens whose loss mask is 1, in
// order, and every other token's logprob is 0; when m = n they are every
// token's (the writer uses this form when a masked token's logprob is not
// +0, so any sample round-trips exactly).
const SequencesMagic = "MGRPOSQ1"

// Manifest describes one step directory.
type Manifest struct {
	Format        string       `json:"format"`
	FormatVersion int          `json:"format_version"`
	Run           string       `json:"run"`
	Role          rollout.Role `json:"role"`
	Step          int          `json:"step"`
	// PolicyVersion is the version that sampled the batch.
	PolicyVersion  int64  `json:"policy_version"`
	IdempotencyKey string `json:"idempotency_key"`
	// Samples is the number of batch entries (lines of the index);
	// Sequences the number of distinct sequences; Tokens the tokens stored
	// (distinct sequences) and ExpandedTokens the tokens of the expanded
	// batch.
	Samples        int   `json:"samples"`
	Sequences      int   `json:"sequences"`
	Tokens         int64 `json:"tokens"`
	ExpandedTokens int64 `json:"expanded_tokens"`
	// Files are the index and the sequences file.
	Files []FileInfo `json:"files"`
	// Temperature is the role's sampling temperature, left out when 1
	// (Options.WireTemperature): a trainer that computes logprobs divides
	// its logits by it.
	Temperature float64 `json:"temperature,omitempty"`
}

// FileInfo names one data file of a step with its size and SHA-256.
type FileInfo struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Bytes is the size of the step's data files (the manifest excluded).
func (m Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Bytes
	}
	return n
}

// checkBatch reports the first sample of b that does not belong to it.
func checkBatch(b trainerbridge.Batch) error {
	if b.Role != rollout.RolePlanner && b.Role != rollout.RoleExecutor {
		return fmt.Errorf("batch role %q, want planner or executor", b.Role)
	}
	if b.Step < 0 {
		return fmt.Errorf("batch step %d is negative", b.Step)
	}
	for i := range b.Samples {
		s := &b.Samples[i]
		if s.Run != b.Run || s.Role != b.Role || s.Step != b.Step {
			return fmt.Errorf("sample %d is run %q role %s step %d, in a batch of run %q role %s step %d", i, s.Run, s.Role, s.Step, b.Run, b.Role, b.Step)
		}
	}
	return nil
}

// encodeBatch writes b's sequences to seqW, each distinct one once, and
// its index to indexW, and returns the manifest's counts (files not filled
// in).
func encodeBatch(b trainerbridge.Batch, seqW, indexW io.Writer) (Manifest, error) {
	if err := checkBatch(b); err != nil {
		return Manifest{}, err
	}
	seq, first := trainerbridge.DistinctSequences(b.Samples)
	sw := bufio.NewWriterSize(seqW, 1<<20)
	iw := bufio.NewWriterSize(indexW, 1<<16)
	if _, err := sw.WriteString(SequencesMagic); err != nil {
		return Manifest{}, err
	}
	var rec []byte
	var tokens, expanded int64
	for _, i := range first {
		var err error
		if rec, err = appendRecord(rec[:0], &b.Samples[i]); err != nil {
			return Manifest{}, fmt.Errorf("sample %d: %w", i, err)
		}
		if _, err := sw.Write(rec); err != nil {
			return Manifest{}, err
		}
		tokens += int64(len(b.Samples[i].InputIDs))
	}
	var line []byte
	for i := range b.Samples {
		s := &b.Samples[i]
		expanded += int64(len(s.InputIDs))
		// One line of IndexFile (rollout.SampleEntry).
		var err error
		if line, err = rollout.AppendSampleEntryJSON(line[:0], seq[i], s); err != nil {
			return Manifest{}, fmt.Errorf("sample %d: %w", i, err)
		}
		line = append(line, '\n')
		if _, err := iw.Write(line); err != nil {
			return Manifest{}, err
		}
	}
	if err := sw.Flush(); err != nil {
		return Manifest{}, err
	}
	if err := iw.Flush(); err != nil {
		return Manifest{}, err
	}
	return Manifest{
		Format: FormatName, FormatVersion: FormatVersion,
		Run: b.Run, Role: b.Role, Step: b.Step, PolicyVersion: b.PolicyVersion, IdempotencyKey: b.IdempotencyKey(),
		Samples: len(b.Samples), Sequences: len(first), Tokens: tokens, ExpandedTokens: expanded,
	}, nil
}

// appendRecord appends the sequences-file record of s (see SequencesMagic).
func appendRecord(dst []byte, s *rollout.Sample) ([]byte, error) {
	n := len(s.InputIDs)
	if len(s.LossMask) != n || len(s.Logprobs) != n {
		return dst, fmt.Errorf("lengths differ: %d input ids, %d mask values, %d logprobs", n, len(s.LossMask), len(s.Logprobs))
	}
	if uint64(n) > math.MaxUint32 {
		return dst, fmt.Errorf("%d tokens: too many for one record", n)
	}
	m, compact := 0, true
	for i, v := range s.LossMask {
		switch {
		case v == 1:
			m++
		case v != 0 || math.Float64bits(s.Logprobs[i]) != 0:
			compact = false
		}
	}
	if !compact {
		m = n
	}
	dst = slices.Grow(dst, 8+5*n+8*m)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(m))
	for i, id := range s.InputIDs {
		if id < math.MinInt32 || id > math.MaxInt32 {
			return dst, fmt.Errorf("token %d: id %d does not fit in 32 bits", i, id)
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(id)))
	}
	for _, v := range s.LossMask {
		dst = append(dst, byte(v))
	}
	for i, f := range s.Logprobs {
		if compact && s.LossMask[i] != 1 {
			continue
		}
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	}
	return dst, nil
}

// countingHash counts and hashes the bytes written through it.
type countingHash struct {
	w io.Writer
	h hash.Hash
	n int64
}

func newCountingHash(w io.Writer) *countingHash { return &countingHash{w: w, h: sha256.New()} }

func (c *countingHash) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

func (c *countingHash) info(name string) FileInfo {
	return FileInfo{Name: name, Bytes: c.n, SHA256: hex.EncodeToString(c.h.Sum(nil))}
}

// Encode writes b in the hand-off format to the two writers and returns
// its manifest, checksums included. The bytes depend only on b.
func Encode(b trainerbridge.Batch, sequences, index io.Writer) (Manifest, error) {
	sw, iw := newCountingHash(sequences), newCountingHash(index)
	m, err := encodeBatch(b, sw, iw)
	if err != nil {
		return Manifest{}, err
	}
	m.Files = []FileInfo{iw.info(IndexFile), sw.info(SequencesFile)}
	return m, nil
}
