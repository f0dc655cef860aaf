package runner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/locklab/locklab/algorithms/mysqllock" // registers mysql-get-lock
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/dbnet"
	"github.com/locklab/locklab/sim/mysqlnode"

	"database/sql"
)

// The MySQL backend's run half: the servers and the drivers'
// connections built in the world; its params and hosts are
// scenarios/mysql.go's.
func init() {
	RegisterBackend(BackendInfo{Name: mysqllock.Backend, Build: newMySQLBackend})
}

// mysqlBackend is the backend of one run.
type mysqlBackend struct {
	w       *sim.World
	net     *dbnet.Net
	nodes   int
	spread  bool
	app     *sim.Host
	shared  *mysqllock.Client
	own     []string
	clients []*mysqllock.Client
}

func newMySQLBackend(w *sim.World, sc *scenarios.Scenario) (Backend, error) {
	if !w.Bubble() {
		return nil, fmt.Errorf("backend %s runs the real go-sql-driver/mysql and needs the bubble runtime (Options.Bubble)", mysqllock.Backend)
	}
	n := dbnet.New(w, func() dbnet.Codec { return mysqlnode.NewCodec() })
	ka := keepaliveOf(sc)
	waitTimeout := paramDuration(sc, "wait_timeout", 28800*time.Second)
	b := &mysqlBackend{w: w, net: n, nodes: scenarios.MySQLNodes(sc), spread: sc.Params["route"] != "first"}
	// The nodes of a multi-primary cluster share the fence row, as
	// Galera's certified replication makes them (mysqlnode.FenceRow);
	// named locks stay per node.
	shared := &mysqlnode.FenceRow{}
	for i := 1; i <= b.nodes; i++ {
		name := fmt.Sprintf("db%d", i)
		// A restart keeps the tables (the fence row), never the named
		// locks, which live in the server's memory.
		n.AddServer(name, ka, func(prev dbnet.Service) dbnet.Service {
			return mysqlnode.NewServer(mysqlnode.Config{Clock: &worldClock{w: w, name: name}, WaitTimeout: waitTimeout, Fence: shared})
		})
	}
	if scenarios.MySQLSharedPool(sc) {
		b.app = w.NewHost("app", nil)
	}
	b.own = scenarios.ClientList(sc, "own_pool")
	w.OnRunEnd(func() {
		// database/sql keeps a goroutine per pool and go-sql-driver one
		// per connection: close them all once the network has failed
		// every connection (dbnet's own hook runs first).
		done := make(chan struct{})
		w.WaitAtEnd(done)
		clients := b.clients
		go func() {
			defer close(done)
			for _, c := range clients {
				c.Close()
			}
		}()
	})
	return b, nil
}

// Connect hands client host h its database/sql pool: its own, dialling
// from h, or the service's shared one, dialling from app.
func (b *mysqlBackend) Connect(h *sim.Host) any {
	if b.app != nil && !slices.Contains(b.own, h.Name) {
		if b.shared == nil {
			b.shared = b.open(b.app, "db1")
		}
		return b.shared
	}
	node := "db1"
	if b.spread && b.nodes == 2 {
		if i, err := strconv.Atoi(strings.TrimPrefix(h.Name, "c")); err == nil && i%2 == 0 {
			node = "db2"
		}
	}
	return b.open(h, node)
}

func (b *mysqlBackend) open(from *sim.Host, node string) *mysqllock.Client {
	cfg := mysql.NewConfig()
	cfg.User = from.Name
	cfg.Net = "tcp"
	cfg.Addr = node + ":3306"
	cfg.DBName = "lab"
	cfg.Logger = &mysql.NopLogger{}
	cfg.DialFunc = b.net.DialFunc(from)
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		panic(fmt.Sprintf("mysql backend: %v", err)) // the configuration is ours
	}
	c := &mysqllock.Client{DB: sql.OpenDB(conn), Config: cfg}
	b.clients = append(b.clients, c)
	return c
}

func (b *mysqlBackend) Hosts() []*sim.Host {
	var out []*sim.Host
	for _, s := range b.net.Servers() {
		out = append(out, s.Host)
	}
	if b.app != nil {
		out = append(out, b.app)
	}
	return out
}

// Servers are the database servers, for node-crash.
func (b *mysqlBackend) Servers() map[string]faults.Server {
	out := map[string]faults.Server{}
	for _, s := range b.net.Servers() {
		out[s.Name] = pgServer{b.net, s.Name}
	}
	return out
}

func (b *mysqlBackend) Metrics() []Metric {
	return []Metric{{Name: "db_segments", Value: int64(b.net.Segments())}}
}

// worldClock is a simulated server's clock: the world's true time, and
// timers that are kernel events, ordered among the events of their
// instant by the server's name, so that a GET_LOCK deadline or a
// wait_timeout falling on the instant a segment arrives happens in the
// same order on every run. Its methods are called from the server's
// goroutines, never with the kernel held.
type worldClock struct {
	w    *sim.World
	name string
}

func (c *worldClock) Now() time.Time {
	var t time.Time
	c.w.Notify("mysql "+c.name+" clock", func() { t = c.w.BubbleTime(c.w.Now()) })
	return t
}

func (c *worldClock) AfterFunc(d time.Duration, f func()) func() bool {
	var ev *sim.Event
	c.w.Notify("mysql "+c.name+" timer", func() {
		ev = c.w.AtKey(c.w.Now()+d, "mysql "+c.name+" timer", func() { go f() })
	})
	return func() bool {
		stopped := false
		c.w.Notify("mysql "+c.name+" timer", func() {
			if ev != nil {
				ev.Cancel()
				stopped = true
			}
		})
		return stopped
	}
}
