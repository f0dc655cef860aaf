package runner

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strconv"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/locklab/locklab/algorithms/mssqllock" // registers the mssql-applock-* algorithms
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/dbnet"
	"github.com/locklab/locklab/sim/mssqlnode"
)

// The SQL Server backend's run half: the servers and the drivers'
// connections built in the world; its params and hosts are
// scenarios/mssql.go's.
func init() {
	RegisterBackend(BackendInfo{Name: mssqllock.Backend, Build: newMSSQLBackend})
}

// sqlServerKeepalive is SQL Server's own keepalive on its TCP endpoint
// (SQL Server Configuration Manager, TCP/IP properties: Keep Alive 30000
// ms; KeepAliveInterval 1000 ms), with Windows' 10 probes.
var sqlServerKeepalive = dbnet.Keepalive{Idle: 30 * time.Second, Interval: time.Second, Count: 10}

// mssqlBackend is the backend of one run.
type mssqlBackend struct {
	w        *sim.World
	net      *dbnet.Net
	maxConns int
	app      *sim.Host
	shared   *mssqllock.Client
	clients  []*mssqllock.Client
}

func newMSSQLBackend(w *sim.World, sc *scenarios.Scenario) (Backend, error) {
	if !w.Bubble() {
		return nil, fmt.Errorf("backend %s runs the real go-mssqldb and needs the bubble runtime (Options.Bubble)", mssqllock.Backend)
	}
	n := dbnet.New(w, func() dbnet.Codec { return mssqlnode.NewCodec() })
	ka := dbnet.Keepalive{
		Idle:     paramDuration(sc, "keepalive_idle", sqlServerKeepalive.Idle),
		Interval: paramDuration(sc, "keepalive_interval", sqlServerKeepalive.Interval),
		Count:    paramInt(sc, "keepalive_count", sqlServerKeepalive.Count),
	}
	b := &mssqlBackend{w: w, net: n}
	if v, err := strconv.Atoi(sc.Params["pool_max_conns"]); err == nil {
		b.maxConns = v
	}
	for _, name := range scenarios.MSSQLServerNames(sc) {
		// A restart, like a new primary, starts with no application
		// locks: they live in memory only. The fence row is data.
		n.AddServer(name, ka, func(prev dbnet.Service) dbnet.Service {
			s := mssqlnode.NewServer(name, &worldClock{w: w, name: name})
			if p, ok := prev.(*mssqlnode.Server); ok {
				s.SetFence(p.Fence()) // the fence row is data: it survives
			}
			return s
		})
	}
	n.Alias("primary", "db1")
	if scenarios.MSSQLSharedPool(sc) {
		b.app = w.NewHost("app", nil)
	}
	w.OnRunEnd(func() {
		// database/sql keeps a goroutine per pool and go-mssqldb one per
		// request: close them once the network has failed every
		// connection (dbnet's own hook runs first).
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

// listenerDialer dials the availability group's listener from a client
// host over the simulated network; as a HostDialer it keeps the driver
// from resolving the name.
type listenerDialer struct {
	net  *dbnet.Net
	from *sim.Host
}

func (d listenerDialer) HostName() string { return "primary" }

func (d listenerDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return d.net.Dial(d.from, host)
}

// Connect hands client host h its database/sql pool: its own, or the
// service's shared one, dialling from app.
func (b *mssqlBackend) Connect(h *sim.Host) any {
	if b.app == nil {
		return b.open(h)
	}
	if b.shared == nil {
		b.shared = b.open(b.app)
	}
	return b.shared
}

func (b *mssqlBackend) open(h *sim.Host) *mssqllock.Client {
	// workstation id: the login carries the client's host name, which
	// must not depend on the machine running the simulation.
	dsn := fmt.Sprintf("sqlserver://%s:x@primary?database=locklab&encrypt=disable&workstation+id=%s&app+name=locklab", h.Name, h.Name)
	c, err := mssql.NewConnector(dsn)
	if err != nil {
		panic(fmt.Sprintf("mssql backend: %v", err)) // the configuration is ours
	}
	c.Dialer = listenerDialer{net: b.net, from: h}
	db := sql.OpenDB(c)
	if b.maxConns > 0 {
		db.SetMaxOpenConns(b.maxConns)
	}
	client := &mssqllock.Client{DB: db}
	b.clients = append(b.clients, client)
	return client
}

func (b *mssqlBackend) Hosts() []*sim.Host {
	var out []*sim.Host
	for _, s := range b.net.Servers() {
		out = append(out, s.Host)
	}
	if b.app != nil {
		out = append(out, b.app)
	}
	return out
}

// Servers are the replicas, for node-crash (and failover, for db2).
func (b *mssqlBackend) Servers() map[string]faults.Server {
	out := map[string]faults.Server{}
	for _, s := range b.net.Servers() {
		if s.Name == "db2" {
			out[s.Name] = mssqlSecondaryReplica{pgServer{b.net, s.Name}}
			continue
		}
		out[s.Name] = pgServer{b.net, s.Name}
	}
	return out
}

// mssqlSecondaryReplica is a secondary an availability-group failover
// makes primary: the listener now leads to it, and it has none of the old
// primary's application locks. The old primary becomes a secondary: its
// databases go through the RESOLVING state, which ends every user
// session (their connections are reset and their locks freed), and it
// comes back with none of them (Microsoft, "Failover and failover modes
// (Always On availability groups)").
type mssqlSecondaryReplica struct{ pgServer }

func (s mssqlSecondaryReplica) Promote() error {
	old := s.n.Route("primary")
	if old == s.name {
		return fmt.Errorf("%s is the primary already", s.name)
	}
	// The fence row is replicated: the new primary has it as the old
	// one had it (a synchronous-commit replica; the model loses no
	// committed row).
	if o, ok := s.n.Server(old).Service().(*mssqlnode.Server); ok {
		if srv, ok := s.n.Server(s.name).Service().(*mssqlnode.Server); ok {
			srv.SetFence(o.Fence())
		}
	}
	s.n.Promote("primary", s.name)
	s.n.Crash(old)
	s.n.Restart(old)
	return nil
}

func (b *mssqlBackend) Metrics() []Metric {
	return []Metric{{Name: "db_segments", Value: int64(b.net.Segments())}}
}
