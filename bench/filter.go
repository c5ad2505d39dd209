package bench

import (
	"fmt"
	"strings"
)

// Filter selects items after loading. The zero Filter keeps every item.
type Filter struct {
	// Levels keeps only items whose Level is one of these (GAIA); empty keeps all levels.
	Levels []string
	// TextOnly drops items with an attachment.
	TextOnly bool
	// IDs keeps only these ids, in file order; an id not found is an error.
	IDs []string
	// Limit keeps at most this many items after the other filters; 0 means no limit.
	Limit int
}

// Apply returns the items that pass the filter, in their original order. It fails when an id asked for
// is not among the items.
func (f Filter) Apply(items []Item) ([]Item, error) {
	levels := make(map[string]bool, len(f.Levels))
	for _, l := range f.Levels {
		levels[strings.TrimSpace(l)] = true
	}
	ids := make(map[string]bool, len(f.IDs))
	for _, id := range f.IDs {
		ids[id] = true
	}
	seen := make(map[string]bool, len(ids))
	var out []Item
	for _, it := range items {
		if len(ids) > 0 {
			if !ids[it.ID] {
				continue
			}
			seen[it.ID] = true
		}
		if len(levels) > 0 && !levels[it.Level] {
			continue
		}
		if f.TextOnly && it.Attachment != "" {
			continue
		}
		if f.Limit > 0 && len(out) >= f.Limit {
			continue
		}
		out = append(out, it)
	}
	var missing []string
	for _, id := range f.IDs {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("filter: unknown ids %s", strings.Join(missing, ", "))
	}
	return out, nil
}
