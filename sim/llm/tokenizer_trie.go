package llm

import (
	"maps"
	"slices"
)

// pieceTrie finds the longest vocabulary piece at the start of a text in one
// forward walk. Greedy longest match by map look-ups tried every length from
// maxPieceBytes down, hashing each candidate, and names, numbers and URLs
// (which no long piece covers) took a dozen look-ups per token; encoding
// generated text and new prompt turns was a tenth of a request's CPU.
//
// Node 0 is the root. A node's children are the edges lo…hi-1, sorted by
// byte; nodes with many children also get a dense table.
type pieceTrie struct {
	nodes  []trieNode
	bytes  []byte  // edge labels
	next   []int32 // edge targets
	dense  [][256]int32
	maxLen int
}

type trieNode struct {
	id     int32 // the piece ending here, or -1
	lo, hi int32 // edges
	dense  int32 // index in dense, or -1
}

// denseChildren is the child count from which a node gets a dense table.
const denseChildren = 12

// newPieceTrie builds the trie of the strings of ids whose id keep accepts.
func newPieceTrie(ids map[string]int, keep func(id int) bool) *pieceTrie {
	// Build with maps, then lay the nodes out breadth first.
	type buildNode struct {
		id       int32
		children map[byte]int
	}
	build := []buildNode{{id: -1, children: map[byte]int{}}}
	maxLen := 0
	for p, id := range ids {
		if !keep(id) {
			continue
		}
		maxLen = max(maxLen, len(p))
		n := 0
		for i := range len(p) {
			c, ok := build[n].children[p[i]]
			if !ok {
				c = len(build)
				build = append(build, buildNode{id: -1, children: map[byte]int{}})
				build[n].children[p[i]] = c
			}
			n = c
		}
		build[n].id = int32(id)
	}
	t := &pieceTrie{maxLen: maxLen}
	// order[i] is the build node laid out as node i; a child's index is
	// its position in order.
	order := []int{0}
	for q := 0; q < len(order); q++ {
		b := build[order[q]]
		n := trieNode{id: b.id, lo: int32(len(t.bytes)), dense: -1}
		for _, c := range slices.Sorted(maps.Keys(b.children)) {
			t.bytes = append(t.bytes, c)
			t.next = append(t.next, int32(len(order)))
			order = append(order, b.children[c])
		}
		n.hi = int32(len(t.bytes))
		if n.hi-n.lo >= denseChildren {
			var d [256]int32
			for i := range d {
				d[i] = -1
			}
			for e := n.lo; e < n.hi; e++ {
				d[t.bytes[e]] = t.next[e]
			}
			n.dense = int32(len(t.dense))
			t.dense = append(t.dense, d)
		}
		t.nodes = append(t.nodes, n)
	}
	return t
}

// child returns the child of node n along byte c, or -1.
func (t *pieceTrie) child(n int32, c byte) int32 {
	node := &t.nodes[n]
	if node.dense >= 0 {
		return t.dense[node.dense][c]
	}
	for e := node.lo; e < node.hi; e++ {
		if t.bytes[e] == c {
			return t.next[e]
		}
	}
	return -1
}

// longest returns the id and length of the longest piece p starts with;
// n is 0 when none does.
func (t *pieceTrie) longest(p string) (id, n int) {
	node := int32(0)
	for i := 0; i < len(p) && i < t.maxLen; i++ {
		if node = t.child(node, p[i]); node < 0 {
			break
		}
		if pid := t.nodes[node].id; pid >= 0 {
			id, n = int(pid), i+1
		}
	}
	return id, n
}
