package score

import "context"

// caseKeyType keys the scored case's name in a context.
type caseKeyType struct{}

// WithCaseKey returns ctx naming the case being scored (an eval's pair
// key, evalrun.PairKey), so that the judge's model can tell which case a
// call is for: a recorded eval keeps its judge requests under it, and a
// replay locates the one it misses by it.
func WithCaseKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, caseKeyType{}, key)
}

// CaseKey returns the case key ctx carries, "" when none.
func CaseKey(ctx context.Context) string {
	k, _ := ctx.Value(caseKeyType{}).(string)
	return k
}
