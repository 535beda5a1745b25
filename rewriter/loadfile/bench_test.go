package loadfile

import (
	"bytes"
	"testing"
)

// BenchmarkTransform streams a 1 MB file of 4-field records (one field
// enclosed, one with an escape) through a transformer in 64 KB pieces.
func BenchmarkTransform(b *testing.B) {
	f := tsv(4)
	f.Enclosed = '"'
	var file []byte
	for len(file) < 1<<20 {
		file = append(file, "alice\t\"some text, \"\"quoted\"\"\"\t12345\tline\\\tend\n"...)
	}
	const piece = 64 << 10
	out := make([]byte, 0, len(file)*2)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		tr := New(f, &seqIDs{})
		out = out[:0]
		var err error
		for p := 0; p < len(file); p += piece {
			if out, err = tr.Transform(out, file[p:min(p+piece, len(file))]); err != nil {
				b.Fatal(err)
			}
		}
		if out, err = tr.Finish(out); err != nil {
			b.Fatal(err)
		}
		if !bytes.HasSuffix(out, []byte("end\n")) {
			b.Fatal("truncated")
		}
	}
}
