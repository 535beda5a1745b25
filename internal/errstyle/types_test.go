package errstyle_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/engine"
	"github.com/leafproxy/leafproxy/internal/errstyle"
	"github.com/leafproxy/leafproxy/proxy"
)

// TestErrorTypesFollowTheRule: the text of every exported error type
// that carries a MySQL code, as the proxy sends it, follows errstyle's
// rule (the scan in scan_test.go covers the constructors in the code).
func TestErrorTypesFollowTheRule(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.9:3306: connection refused")
	unknown := &segment.UnknownTagError{Tag: "ordr"}
	errs := []proxy.SQLError{
		unknown,
		&allocator.UnknownTagError{UnknownTagError: unknown, Near: "order"},
		&segment.ExhaustedError{Tag: "t", Waited: 2 * time.Second, LastErr: cause},
		&segment.ExhaustedError{Tag: "t", Waited: 2 * time.Second},
		&segment.PastEndError{Tag: "t", Limit: segment.Limit{Max: 127, By: "db.t.id tinyint(4)"}, Next: 128},
		&segment.PastEndError{Tag: "t", Limit: segment.Limit{Max: 3, By: "MAXVALUE"}, Next: 4, RunOut: true},
		&segment.OptionsError{Tag: "t", Why: "its first ID would be 10, above its MAXVALUE 5"},
		&segment.BelowIssuedError{Tag: "t", Floor: 5, MaxID: 1001},
		&allocator.UnavailableError{Tag: "s", Pending: true, Since: time.Now(), Err: cause},
		&allocator.UnavailableError{Tag: "s", Err: cause},
		&engine.OutOfRangeError{Tag: "small", Table: "shop.small", Column: "id", Type: "int(11)", Max: 2147483647, ID: 2147483648, Row: 2},
		&engine.OutOfRangeError{Tag: "small", Table: "shop.small", Column: "id", Type: "int(11)", Max: 2147483647, Row: 1, Cause: cause},
		&proxy.ParamCountError{Got: 2, Want: 3},
		proxy.ErrNeedAdmin("SHOW LEAFPROXY SEQUENCES").(proxy.SQLError),
	}
	for _, tag := range []string{"", strings.Repeat("x", 200), "\xff"} {
		errs = append(errs, schema.CheckTag(tag).(proxy.SQLError))
	}
	for _, e := range errs {
		if err := errstyle.Check(e.Code(), e.Error()); err != nil {
			t.Errorf("%T: %v", e, err)
		}
	}
}
