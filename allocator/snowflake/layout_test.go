package snowflake

import (
	"strings"
	"testing"
	"time"
)

func TestLayoutComposeDecodeRoundTrip(t *testing.T) {
	layouts := map[string]Layout{
		"default":       DefaultLayout(),
		"js-safe":       JSSafeLayout(),
		"wide-sequence": {TimeBits: 41, WorkerBits: 0, SequenceBits: 22, Unit: time.Millisecond, Epoch: DefaultEpoch},
		"sonyflake":     {TimeBits: 39, WorkerBits: 16, SequenceBits: 8, Unit: 10 * time.Millisecond, Epoch: DefaultEpoch},
		"full-63":       {TimeBits: 32, WorkerBits: 16, SequenceBits: 15, Unit: time.Second, Epoch: DefaultEpoch},
	}
	for name, l := range layouts {
		t.Run(name, func(t *testing.T) {
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
			cases := [][3]int64{
				{0, 0, 0},
				{1, 0, 0},
				{0, l.MaxWorker(), 0},
				{0, 0, l.MaxSequence()},
				{12345, l.MaxWorker() / 2, l.MaxSequence() / 3},
				{l.MaxTicks(), l.MaxWorker(), l.MaxSequence()},
			}
			for _, c := range cases {
				id, err := l.Compose(c[0], c[1], c[2])
				if err != nil {
					t.Fatalf("compose %v: %v", c, err)
				}
				if id < 0 {
					t.Fatalf("compose %v = %d: negative", c, id)
				}
				p := l.Decode(id)
				if p.Ticks != c[0] || p.Worker != c[1] || p.Sequence != c[2] {
					t.Fatalf("decode(compose(%v)) = %+v", c, p)
				}
				if want := l.TickStart(c[0]); !p.Time.Equal(want) {
					t.Fatalf("decode time %v, want %v", p.Time, want)
				}
			}
			// The largest ID is positive and uses every non-sign bit the layout has.
			maxID, _ := l.Compose(l.MaxTicks(), l.MaxWorker(), l.MaxSequence())
			if bits := l.TimeBits + l.WorkerBits + l.SequenceBits; maxID != 1<<bits-1 {
				t.Fatalf("max id %d, want 2^%d-1", maxID, bits)
			}
		})
	}
}

func TestLayoutOrdering(t *testing.T) {
	l := DefaultLayout()
	// A later tick beats any worker and sequence of an earlier one.
	a, _ := l.Compose(100, l.MaxWorker(), l.MaxSequence())
	b, _ := l.Compose(101, 0, 0)
	if a >= b {
		t.Fatalf("ids not ordered by time: %d >= %d", a, b)
	}
}

func TestLayoutComposeRejectsOutOfRange(t *testing.T) {
	l := DefaultLayout()
	for _, c := range [][3]int64{{-1, 0, 0}, {l.MaxTicks() + 1, 0, 0}, {0, l.MaxWorker() + 1, 0}, {0, -1, 0}, {0, 0, l.MaxSequence() + 1}, {0, 0, -1}} {
		if _, err := l.Compose(c[0], c[1], c[2]); err == nil {
			t.Errorf("compose %v: no error", c)
		}
	}
}

func TestLayoutValidate(t *testing.T) {
	ok := DefaultLayout()
	with := func(f func(*Layout)) Layout { l := ok; f(&l); return l }
	cases := []struct {
		name string
		l    Layout
		want string // "" = valid
	}{
		{"default", ok, ""},
		{"js-safe", JSSafeLayout(), ""},
		{"exactly 63", with(func(l *Layout) { l.TimeBits = 41; l.WorkerBits = 10; l.SequenceBits = 12 }), ""},
		{"64 bits", with(func(l *Layout) { l.TimeBits = 42 }), "at most 63"},
		{"too few time bits", with(func(l *Layout) { l.TimeBits = 8 }), "time bits"},
		{"no sequence", with(func(l *Layout) { l.SequenceBits = 0 }), "sequence bits"},
		{"worker bits over int", with(func(l *Layout) { l.TimeBits = 20; l.WorkerBits = 32; l.SequenceBits = 8 }), "worker bits"},
		{"sub-ms unit", with(func(l *Layout) { l.Unit = time.Microsecond }), "time unit"},
		{"zero unit", with(func(l *Layout) { l.Unit = 0 }), "time unit"},
		{"no epoch", with(func(l *Layout) { l.Epoch = time.Time{} }), "epoch"},
	}
	for _, c := range cases {
		err := c.l.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func TestJSSafeLayoutFitsJavaScriptNumbers(t *testing.T) {
	l := JSSafeLayout()
	maxID, err := l.Compose(l.MaxTicks(), l.MaxWorker(), l.MaxSequence())
	if err != nil {
		t.Fatal(err)
	}
	const maxSafe = 1<<53 - 1 // Number.MAX_SAFE_INTEGER
	if maxID > maxSafe {
		t.Fatalf("largest id %d exceeds 2^53-1", maxID)
	}
	for _, id := range []int64{maxID, maxID - 1, maxID / 3} {
		if int64(float64(id)) != id {
			t.Fatalf("id %d does not survive a float64", id)
		}
	}
	if end := l.End(); end.Year() < 2080 {
		t.Fatalf("js-safe layout ends in %d: too soon", end.Year())
	}
}

func TestLayoutEndAndTicks(t *testing.T) {
	l := DefaultLayout()
	// 2^41 ms from 2020-01-01 is 2089-09-06T15:47:35.552Z.
	if got := l.End().UTC().Format(time.RFC3339Nano); got != "2089-09-06T15:47:35.552Z" {
		t.Fatalf("end %s", got)
	}
	at := DefaultEpoch.Add(1500 * time.Microsecond)
	if got := l.Ticks(at); got != 1 {
		t.Fatalf("ticks(epoch+1.5ms) = %d, want 1", got)
	}
	if got := l.Ticks(DefaultEpoch.Add(-time.Microsecond)); got != -1 {
		t.Fatalf("ticks(epoch-1us) = %d, want -1", got)
	}
	if ceilDiv(7, 2) != 4 || ceilDiv(-7, 2) != -3 || floorDiv(-7, 2) != -4 || ceilDiv(6, 2) != 3 {
		t.Fatal("ceilDiv/floorDiv wrong")
	}
}

func TestLayoutStringAndSame(t *testing.T) {
	if got := DefaultLayout().String(); got != "41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z" {
		t.Errorf("String: %q", got)
	}
	if got := JSSafeLayout().String(); got != "41/5/7 x 1ms, epoch 2020-01-01T00:00:00Z" {
		t.Errorf("String: %q", got)
	}
	east := time.FixedZone("UTC+8", 8*3600)
	d := DefaultLayout()
	for _, tc := range []struct {
		name string
		b    Layout
		same bool
	}{
		{"equal", DefaultLayout(), true},
		{"epoch in another zone", Layout{41, 10, 12, time.Millisecond, DefaultEpoch.In(east)}, true},
		{"epoch within the same ms", Layout{41, 10, 12, time.Millisecond, DefaultEpoch.Add(300 * time.Microsecond)}, true},
		{"epoch a ms later", Layout{41, 10, 12, time.Millisecond, DefaultEpoch.Add(time.Millisecond)}, false},
		{"time bits", Layout{40, 10, 12, time.Millisecond, DefaultEpoch}, false},
		{"worker bits", Layout{41, 5, 12, time.Millisecond, DefaultEpoch}, false},
		{"sequence bits", Layout{41, 10, 7, time.Millisecond, DefaultEpoch}, false},
		{"unit", Layout{41, 10, 12, 1500 * time.Microsecond, DefaultEpoch}, false},
	} {
		if got := SameLayout(d, tc.b); got != tc.same {
			t.Errorf("%s: SameLayout %v", tc.name, got)
		}
	}
}
