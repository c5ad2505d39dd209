package rollout

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// writeParquet writes rows as one Parquet file whose columns are the fields of
// T in declaration order (named like the JSON keys). The writer's created_by
// is fixed so that the bytes depend only on rows.
func writeParquet[T any](w io.Writer, rows []T) error {
	pw := parquet.NewGenericWriter[T](w,
		parquet.Compression(&parquet.Snappy),
		parquet.CreatedBy("mgrpo", "", ""),
	)
	if len(rows) > 0 {
		if _, err := pw.Write(rows); err != nil {
			return fmt.Errorf("write parquet: %w", err)
		}
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write parquet: %w", err)
	}
	return nil
}

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
