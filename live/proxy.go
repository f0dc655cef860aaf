package live

import (
	"bufio"
	"context"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// link is the way from one client to one Redis node. The client's go-redis
// dials it in-process (a net.Pipe); for each connection the link dials the
// real server and copies RESP values between the two, one whole value at
// a time, passing each through the fabric: a partition or a drop rule
// loses it, a delay rule holds it, a trigger fires on it. A paused client's
// replies wait in the link until it resumes.
//
// The request timeout is the link's too, not go-redis's: a paused process
// cannot notice a deadline, so a timeout counts only the time the client
// ran (clientHost.runningSince). When a reply is late past it, the link
// closes the connection and go-redis sees the command fail, as it sees an
// i/o timeout in a simulated run.
type link struct {
	client *clientHost
	server *redisServer
	fabric *fabric
	wait   time.Duration // the request timeout
	count  func()        // counts a message sent, for the run's metrics
	// inflight counts messages held up in the network, which the run
	// waits for before it ends.
	inflight *sync.WaitGroup
}

// dial is the go-redis Dialer of the link. It never fails: a node that is
// down or cut off shows as a connection whose first command fails, as a
// refused connection does.
func (l *link) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	app, mine := net.Pipe()
	go l.serve(mine)
	return app, nil
}

// pending is a request forwarded to the server whose reply the client
// still awaits.
type pending struct {
	op         string
	sent       time.Time
	pausedThen time.Duration
	// delivered is closed when the reply reached the client.
	delivered chan struct{}
}

// serve carries one connection until either side closes it.
func (l *link) serve(app net.Conn) {
	var once sync.Once
	var up net.Conn
	closeAll := func() {
		once.Do(func() {
			app.Close()
			if up != nil {
				up.Close()
			}
		})
	}
	// A timeout ends the client's side only: a request held up in the
	// network still reaches the server after the client gave up, as in a
	// simulated run (a delayed SET still takes the lock).
	closeApp := func() { app.Close() }
	defer closeAll()
	var err error
	up, err = net.DialTimeout("tcp", l.server.Addr(), time.Second)
	if err != nil {
		if l.server.down.Load() {
			l.requests(bufio.NewReader(app), nil, nil, closeApp)
		}
		return
	}
	queue := make(chan pending, 1024)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.replies(bufio.NewReader(up), app, queue)
		// A crashed node answers nothing more: the client's requests
		// time out (requests goes on swallowing them), as they do on a
		// simulated node that is down.
		if !l.server.down.Load() {
			closeAll()
		}
	}()
	l.requests(bufio.NewReader(app), up, queue, closeApp)
	closeAll()
	wg.Wait()
}

// requests copies the client's commands to the server. With up nil, or
// once the server has crashed, it swallows them: a node that is down
// answers nothing and each request times out, which is what a simulated
// node-crash is (a host that does not answer), rather than the refused
// connection a dead process on a live host gives.
func (l *link) requests(from *bufio.Reader, up net.Conn, queue chan<- pending, closeAll func()) {
	if queue != nil {
		defer close(queue)
	}
	for {
		raw, op, err := readRESP(from)
		if err != nil || l.client.isCrashed() {
			return
		}
		l.count()
		p := pending{op: op, sent: time.Now(), pausedThen: l.client.pausedTotal(), delivered: make(chan struct{})}
		go l.timeout(p, closeAll)
		fate := l.fabric.pass(message{from: l.client.Name, to: l.server.Name, op: op, dir: "request"})
		if fate.drop {
			continue // lost on the way: no reply will come
		}
		if fate.delay > 0 {
			l.inflight.Add(1)
			time.Sleep(fate.delay)
			l.inflight.Done()
		}
		if up == nil || l.server.down.Load() {
			continue // no answer from a node that is down
		}
		if _, err := up.Write(raw); err != nil {
			if l.server.down.Load() {
				continue
			}
			return
		}
		queue <- p
	}
}

// replies copies the server's replies to the client, in order.
func (l *link) replies(from *bufio.Reader, app net.Conn, queue <-chan pending) {
	for {
		raw, _, err := readRESP(from)
		if err != nil {
			return
		}
		p, ok := <-queue
		if !ok {
			return
		}
		l.count()
		fate := l.fabric.pass(message{from: l.server.Name, to: l.client.Name, op: p.op, dir: "reply"})
		if fate.drop {
			continue // the client times out on it
		}
		if fate.delay > 0 {
			time.Sleep(fate.delay)
		}
		if !l.client.waitRunning() {
			return
		}
		if l.late(p) {
			return // the client has given up on this connection
		}
		if _, err := app.Write(raw); err != nil {
			return
		}
		close(p.delivered)
	}
}

// late reports whether the client's timeout for p has run out.
func (l *link) late(p pending) bool {
	return l.client.runningSince(p.sent, p.pausedThen) >= l.wait
}

// timeout closes the connection when p's reply has not reached the client
// within the timeout, counted on the client's running time.
func (l *link) timeout(p pending, closeAll func()) {
	for {
		left := l.wait - l.client.runningSince(p.sent, p.pausedThen)
		if left <= 0 {
			closeAll()
			return
		}
		select {
		case <-p.delivered:
			return
		case <-time.After(left):
		}
	}
}

// newClient is a go-redis client of node through the link, with the
// options the simulation's clients have (sim.ClientOptions): RESP2, no
// library retries, one connection, no deadlines of go-redis's own (the
// link keeps the timeout, see link).
func (l *link) newClient(libraryRetries bool) *redis.Client {
	o := &redis.Options{
		Addr:            l.server.Name + ":6379",
		Dialer:          l.dial,
		Password:        l.server.Password,
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		ReadTimeout:     -2,
		WriteTimeout:    -2,
		PoolSize:        1,
		ConnMaxIdleTime: -1,
	}
	if libraryRetries {
		o.MaxRetries = 3
	}
	return redis.NewClient(o)
}
