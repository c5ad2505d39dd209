package farm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadTasks(t *testing.T) {
	in := "\xef\xbb\xbf" + `{"id":"a","question":"Q1?","answer":"x"}` + "\n\n" +
		`{"id":"b","question":"<b>Q2</b>","answer":"y","metadata":{ "level" : 2 }}` + "\n" +
		`{"id":"c","question":"Q3","answer":"z","metadata":null}`
	tasks, err := ReadTasks(strings.NewReader(in), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 3 || tasks[0].ID != "a" || tasks[1].Question != "<b>Q2</b>" || string(tasks[1].Metadata) != `{"level":2}` || tasks[2].Metadata != nil {
		t.Fatalf("tasks = %+v", tasks)
	}
}

func TestReadTasksErrors(t *testing.T) {
	good := `{"id":"a","question":"q","answer":"x"}`
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"bad json", good + "\n{\"id\":", "t.jsonl:2: invalid task"},
		{"missing answer", good + "\n\n" + `{"id":"b","question":"q"}`, `t.jsonl:3: invalid task: missing key "answer"`},
		{"empty id", `{"id":" ","question":"q","answer":"x"}`, `t.jsonl:1: invalid task: empty "id"`},
		{"number answer", `{"id":"a","question":"q","answer":4}`, `t.jsonl:1: invalid task: "answer" must be a string`},
		{"null question", `{"id":"a","question":null,"answer":"x"}`, `"question" must be a string`},
		{"unknown key", `{"id":"a","question":"q","answer":"x","level":1,"extra":2}`, `unknown key "extra"`},
		{"wrong case key", `{"ID":"a","question":"q","answer":"x"}`, `unknown key "ID"`},
		{"duplicate id", good + "\n" + good, `t.jsonl:2: duplicate id "a" (first on line 1)`},
		{"trailing data", good + ` {}`, "t.jsonl:1: invalid task: data after the JSON object"},
		{"array", `[1]`, "t.jsonl:1: invalid task"},
		{"metadata not object", `{"id":"a","question":"q","answer":"x","metadata":[1]}`, "metadata must be an object"},
		{"empty", "\n \n", "t.jsonl: no tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tasks, err := ReadTasks(strings.NewReader(tt.in), "t.jsonl")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if tasks != nil {
				t.Fatalf("tasks %v returned with an error", tasks)
			}
		})
	}
}

func TestLoadTasks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(path, []byte(`{"id":"a","question":"q","answer":"x"}`+"\n"+`oops`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadTasks(path)
	if err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Fatalf("error %v, want one naming %s:2", err, path)
	}
	if _, err := LoadTasks(filepath.Join(t.TempDir(), "none.jsonl")); err == nil {
		t.Fatal("missing file: want an error")
	}
}

func FuzzReadTasks(f *testing.F) {
	f.Add(`{"id":"a","question":"q","answer":"x"}`)
	f.Add(`{"id":"a","question":"q","answer":"x","metadata":{"k":[1,2]}}` + "\n" + `{"id":"b","question":"q","answer":"y"}`)
	f.Add(`{"id":1}`)
	f.Fuzz(func(t *testing.T, in string) {
		tasks, err := ReadTasks(strings.NewReader(in), "f")
		if err != nil {
			if tasks != nil {
				t.Fatal("tasks returned with an error")
			}
			return
		}
		seen := map[string]bool{}
		for _, task := range tasks {
			if strings.TrimSpace(task.ID) == "" || strings.TrimSpace(task.Question) == "" || strings.TrimSpace(task.Answer) == "" || seen[task.ID] {
				t.Fatalf("accepted invalid task %+v", task)
			}
			seen[task.ID] = true
		}
	})
}
