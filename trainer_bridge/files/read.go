package files

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/rollout"
)

// ErrCorrupt is returned (wrapped) for a step directory whose files do not
// match its manifest or the format.
var ErrCorrupt = errors.New("corrupt step files")

// ReadManifest reads the manifest of the step directory dir. A directory
// without one is an error wrapping fs.ErrNotExist.
func ReadManifest(dir string) (Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return Manifest{}, fmt.Errorf("read manifest: %w", err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("read manifest %s: %w: %v", dir, ErrCorrupt, err)
	}
	if m.Format != FormatName || m.FormatVersion != FormatVersion {
		return Manifest{}, fmt.Errorf("read manifest %s: format %q version %d, want %q version %d", dir, m.Format, m.FormatVersion, FormatName, FormatVersion)
	}
	return m, nil
}

// ReadStep reads the step directory dir, checks every file against the
// manifest's sizes and checksums, and expands the index into the batch's
// samples in batch order. Entries that name the same sequence share its
// token slices, which are therefore read-only.
func ReadStep(dir string) (Manifest, []rollout.Sample, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return Manifest{}, nil, err
	}
	data := map[string][]byte{}
	for _, f := range m.Files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.Base(f.Name)))
		if err != nil {
			return m, nil, fmt.Errorf("read step %s: %w", dir, err)
		}
		sum := sha256.Sum256(b)
		if int64(len(b)) != f.Bytes || hex.EncodeToString(sum[:]) != f.SHA256 {
			return m, nil, fmt.Errorf("read step %s: %s: %w: %d bytes, sha256 %x; the manifest says %d bytes, %s", dir, f.Name, ErrCorrupt, len(b), sum, f.Bytes, f.SHA256)
		}
		data[f.Name] = b
	}
	seqData, ok1 := data[SequencesFile]
	indexData, ok2 := data[IndexFile]
	if !ok1 || !ok2 {
		return m, nil, fmt.Errorf("read step %s: %w: the manifest does not name %s and %s", dir, ErrCorrupt, IndexFile, SequencesFile)
	}
	seqs, err := DecodeSequences(seqData)
	if err != nil {
		return m, nil, fmt.Errorf("read step %s: %w", dir, err)
	}
	samples, err := Expand(m, seqs, bytes.NewReader(indexData))
	if err != nil {
		return m, nil, fmt.Errorf("read step %s: %w", dir, err)
	}
	return m, samples, nil
}

// DecodeSequences decodes a sequences file.
func DecodeSequences(data []byte) ([]rollout.Tokens, error) {
	if !bytes.HasPrefix(data, []byte(SequencesMagic)) {
		return nil, fmt.Errorf("%s: %w: does not start with %q", SequencesFile, ErrCorrupt, SequencesMagic)
	}
	data = data[len(SequencesMagic):]
	var out []rollout.Tokens
	for off := 0; off < len(data); {
		if len(data)-off < 8 {
			return nil, fmt.Errorf("%s: record %d: %w: truncated header", SequencesFile, len(out), ErrCorrupt)
		}
		n := int(binary.LittleEndian.Uint32(data[off:]))
		m := int(binary.LittleEndian.Uint32(data[off+4:]))
		off += 8
		if m > n || uint64(len(data)-off) < 5*uint64(n)+8*uint64(m) {
			return nil, fmt.Errorf("%s: record %d: %w: %d tokens and %d logprobs do not fit in %d bytes", SequencesFile, len(out), ErrCorrupt, n, m, len(data)-off)
		}
		var seq rollout.Tokens
		if n > 0 {
			seq = rollout.Tokens{InputIDs: make([]int, n), LossMask: make([]int8, n), Logprobs: make([]float64, n)}
		}
		for i := range n {
			seq.InputIDs[i] = int(int32(binary.LittleEndian.Uint32(data[off+4*i:])))
		}
		off += 4 * n
		ones := 0
		for i := range n {
			seq.LossMask[i] = int8(data[off+i])
			if seq.LossMask[i] == 1 {
				ones++
			}
		}
		off += n
		switch {
		case m == n:
			for i := range n {
				seq.Logprobs[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[off+8*i:]))
			}
		case m == ones:
			j := 0
			for i, v := range seq.LossMask {
				if v == 1 {
					seq.Logprobs[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[off+8*j:]))
					j++
				}
			}
		default:
			return nil, fmt.Errorf("%s: record %d: %w: %d logprobs for %d tokens of which %d have loss mask 1", SequencesFile, len(out), ErrCorrupt, m, n, ones)
		}
		off += 8 * m
		out = append(out, seq)
	}
	return out, nil
}

// Expand reads an index and returns the batch it describes: one Sample per
// line, its run, step and role from m and its tokens from seqs[seq].
func Expand(m Manifest, seqs []rollout.Tokens, index io.Reader) ([]rollout.Sample, error) {
	out := make([]rollout.Sample, 0, m.Samples)
	br := bufio.NewReader(index)
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			var e rollout.SampleEntry
			if derr := dec.Decode(&e); derr != nil {
				return nil, fmt.Errorf("%s:%d: %w: %v", IndexFile, line, ErrCorrupt, derr)
			}
			if e.Seq < 0 || e.Seq >= len(seqs) {
				return nil, fmt.Errorf("%s:%d: %w: seq %d, the sequences file holds %d", IndexFile, line, ErrCorrupt, e.Seq, len(seqs))
			}
			out = append(out, e.Expand(m.Run, m.Step, m.Role, seqs[e.Seq]))
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if len(out) != m.Samples {
		return nil, fmt.Errorf("%s: %w: %d entries, the manifest says %d", IndexFile, ErrCorrupt, len(out), m.Samples)
	}
	return out, nil
}
