package rollout

import (
	"fmt"

	"github.com/parquet-go/parquet-go"
)

// ReadSamplesParquet reads a planner.parquet or executor.parquet file.
func ReadSamplesParquet(path string) ([]Sample, error) {
	rows, err := parquet.ReadFile[Sample](path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return rows, nil
}

// ReadStatsParquet reads a stats.parquet file. Empty lists are returned as
// empty slices, as in stats.jsonl.
func ReadStatsParquet(path string) ([]QueryStats, error) {
	rows, err := parquet.ReadFile[QueryStats](path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	for i := range rows {
		if rows[i].MainRewards == nil {
			rows[i].MainRewards = []float64{}
		}
		if rows[i].D == nil {
			rows[i].D = []int{}
		}
		if rows[i].SubRewards == nil {
			rows[i].SubRewards = []float64{}
		}
	}
	return rows, nil
}
