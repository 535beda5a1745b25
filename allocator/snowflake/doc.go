// Package snowflake generates time-ordered 64-bit IDs: a time count since an
// epoch, a worker id and a per-tick sequence, packed into a positive int64
// (bit layout in Layout).
//
// It improves on Leaf-snowflake, bwmarrin/snowflake and sonyflake where those
// have produced duplicates or stopped: time comes from the process's
// monotonic clock; a high-water timestamp is persisted (in leaf_worker and in
// a local state file) so a restart behind it waits or refuses; worker ids are
// leased from the database with a TTL and fenced, so a paused process cannot
// issue under an id that has passed to another; the sequence of each tick
// starts at a small random offset so id%N spreads evenly at low traffic; and
// the generator refuses to issue once the time bits run out instead of
// wrapping into negative or repeated IDs.
//
// # Why no two holders of a worker id issue the same tick
//
// Every holder records a high-water mark before it may reach it: a renewal
// sent at local time s writes last_timestamp = s+TTL and lets the generator
// issue only until s+TTL-FenceMargin (measured on the same clock). The
// next holder reads last_timestamp when it takes the id and issues only
// ticks starting at or after it. The two tick ranges are disjoint whatever
// the skew between the two hosts' clocks; skew only makes the taker wait
// (up to MaxBackward) or refuse. Expiry itself is judged by the database's
// clock, so hosts agree on when an id is free, and a renewal only succeeds
// while the row still carries the holder's token, so a process that was
// paused past its lease learns it lost the id and stops for good.
//
// A clean Close records the exact mark (the end of the last issued tick) so
// the next holder starts at once.
//
// # The layout is recorded in the store
//
// IDs of two layouts can collide (41/5/7 and 41/10/12 give the same ID for
// different times and workers), so every process sharing a store must use
// one layout. MySQLLeaser.CheckLayout records the first process's layout in
// leaf_snowflake_layout (INSERT IGNORE, then read back) and compares every
// later one with it; New calls it before taking a worker id, so a process
// with another layout neither holds an id nor issues (a LayoutMismatchError
// names both layouts, who recorded the store's and the live holders). A
// store with leaf_worker rows but no layout row (used before layouts were
// recorded) gets the first checking process's layout: it is assumed to be
// what those rows were issued with.
//
// Each snowflake tag's layout is recorded too, in row "tag:<tag>"
// (CheckTagLayout), so a tag may have a layout of its own (41/5/7 keeps
// IDs below 2^53) while every process still agrees on it. Worker ids are
// then leased per layout: the global layout's in leaf_worker, any other's
// in leaf_worker_layout keyed by LayoutKey (MySQLLeaser.ForLayout,
// LeaserOf), because uniqueness must hold among the processes issuing one
// layout and the id spaces of two layouts differ.
//
// # Fixed worker ids
//
// MySQLLeaser.Fixed registers a configured id in leaf_worker under the same
// rules as a leased one (TTL, heartbeat, fencing, release on close, the
// previous holder's mark honoured). While another live process holds the
// id (fixed, or leased by an auto process) Acquire fails with a
// WorkerHeldError naming its host, pid and lease expiry, so two processes
// configured with the same id cannot both issue. The auto leaser passes
// over free ids whose mark lies further ahead of its clock than
// MaxBackward, so one bad row cannot stop every start.
//
// # The state file
//
// For an unregistered FixedWorker there is no database; the state file is
// then the only record of issued time. It is written the same way, ahead of use: a
// reservation 3*PersistEvery ahead, pushed forward every PersistEvery, and
// the generator never issues at or past what the file says. A crash leaves a
// mark above every issued ID, so a restart with a clock behind it waits (up
// to MaxBackward) or refuses.
//
// For a leased worker the file remembers the id and its mark, but the id is
// never reused from the file when the store is unreachable at start: the old
// lease may have expired and passed to another process meanwhile, which only
// the store knows. New refuses (naming the remembered id) and the caller
// retries; refusing is the only choice that cannot duplicate. Keep the lease
// TTL above MaxBackward so a start-up wait cannot outlive the fresh lease.
package snowflake
