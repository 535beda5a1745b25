package relay_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/relay"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// scriptedWatcher answers as its fields say and counts what it was asked.
type scriptedWatcher struct {
	relay.BaseAnswerWatcher
	errV        relay.ErrVerdict
	okRestore   string
	okID        uint64 // 0: the server's
	errs, oks   int
	gotAffected uint64
	gotCode     uint16
	gotMsg      string
}

func (w *scriptedWatcher) OnErr(code uint16, msg string) relay.ErrVerdict {
	w.errs++
	w.gotCode, w.gotMsg = code, msg
	return w.errV
}

func (w *scriptedWatcher) OnOK(affected, insertID uint64) relay.OKVerdict {
	w.oks++
	w.gotAffected = affected
	if w.okID != 0 {
		insertID = w.okID
	}
	return relay.OKVerdict{Restore: w.okRestore, InsertID: insertID}
}

// okPayload: an OK with affected rows, insert id, status 2, no warnings.
func okPayload(affected, insertID uint64) []byte {
	p := mysql.AppendLengthEncodedInteger([]byte{0x00}, affected)
	p = mysql.AppendLengthEncodedInteger(p, insertID)
	return append(p, 2, 0, 0, 0)
}

func errPayload(code uint16, msg string) []byte {
	return append([]byte{0xFF, byte(code), byte(code >> 8), '#', '2', '3', '0', '0', '0'}, msg...)
}

// TestJudgeFirst: the verdict on an answer's first packet, taken once,
// from the watcher's one call.
func TestJudgeFirst(t *testing.T) {
	cases := []struct {
		name  string
		w     scriptedWatcher
		isErr bool
		p     []byte
		want  relay.Verdict
		errs  int
		oks   int
	}{
		{name: "ERR relayed", p: errPayload(1062, "Duplicate entry '5' for key 'PRIMARY'"), isErr: true, errs: 1},
		{name: "ERR retried", w: scriptedWatcher{errV: relay.ErrVerdict{Retry: true, Restore: "ignored"}},
			p: errPayload(1062, "dup"), isErr: true, want: relay.Verdict{Act: relay.ActRetry}, errs: 1},
		{name: "ERR restored", w: scriptedWatcher{errV: relay.ErrVerdict{Restore: "SELECT 1"}},
			p: errPayload(1146, "no table"), isErr: true, want: relay.Verdict{Act: relay.ActRestoreErr, SQL: "SELECT 1"}, errs: 1},
		{name: "OK as it is", p: okPayload(1, 7), oks: 1},
		{name: "OK reported", w: scriptedWatcher{okID: 1 << 40}, p: okPayload(1, 0),
			want: relay.Verdict{Act: relay.ActReport, InsertID: 1 << 40}, oks: 1},
		{name: "OK restored", w: scriptedWatcher{okRestore: "DO 1"}, p: okPayload(0, 0),
			want: relay.Verdict{Act: relay.ActRestoreOK, SQL: "DO 1"}, oks: 1},
		{name: "OK too short to read", w: scriptedWatcher{okRestore: "DO 1"}, p: []byte{0, 0, 0, 2, 0, 0}},
		{name: "OK with a cut insert id", w: scriptedWatcher{okRestore: "DO 1"}, p: []byte{0, 0, 0xFE, 1, 2, 3, 4}},
		{name: "no OK", w: scriptedWatcher{okRestore: "DO 1"}, p: []byte{1, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := c.w
			got := relay.Judge(&w, c.isErr, c.p)
			if got != c.want || w.errs != c.errs || w.oks != c.oks {
				t.Errorf("verdict %+v (asked OnErr %d, OnOK %d times), want %+v (%d, %d)", got, w.errs, w.oks, c.want, c.errs, c.oks)
			}
			if c.isErr && (w.gotCode != uint16(c.p[1])|uint16(c.p[2])<<8 || w.gotMsg != string(c.p[9:])) {
				t.Errorf("OnErr saw %d %q", w.gotCode, w.gotMsg)
			}
		})
	}
}

// TestOKWithInsertID: the OK the client gets keeps everything but the
// insert id, whatever the widths of both.
func TestOKWithInsertID(t *testing.T) {
	for _, c := range []struct{ affected, from, to uint64 }{
		{1, 0, 5}, {1, 5, 0}, {3, 250, 1 << 20}, {1 << 17, 1 << 40, 1}, {0, 7, 0},
	} {
		p := append(okPayload(c.affected, c.from), "info"...)
		got := wire.OKWithInsertID([]byte{9}, p, c.to)
		want := append([]byte{9}, append(okPayload(c.affected, c.to), "info"...)...)
		if !bytes.Equal(got, want) {
			t.Errorf("%+v: % x, want % x", c, got, want)
		}
	}
}

// TestBaseAnswerWatcher relays everything as it is.
func TestBaseAnswerWatcher(t *testing.T) {
	var w relay.AnswerWatcher = relay.BaseAnswerWatcher{}
	if v := relay.Judge(w, true, errPayload(1062, "x")); v != (relay.Verdict{}) {
		t.Errorf("ERR: %+v", v)
	}
	if v := relay.Judge(w, false, okPayload(1, 42)); v != (relay.Verdict{}) {
		t.Errorf("OK: %+v", v)
	}
	if err := w.Redo(context.Background()); err != nil {
		t.Error(err)
	}
	var r relay.AnswerWatcher = relay.RetryOnly(func(code uint16, _ string) bool { return code == 1690 })
	if v := relay.Judge(r, true, errPayload(1690, "out of range")); v.Act != relay.ActRetry {
		t.Errorf("relay.RetryOnly: %+v", v)
	}
	if v := relay.Judge(r, false, okPayload(1, 42)); v != (relay.Verdict{}) {
		t.Errorf("relay.RetryOnly OK: %+v", v)
	}
}
