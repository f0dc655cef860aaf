package live

import (
	"bufio"
	"errors"
	"strconv"
	"strings"
)

// readRESP reads one whole RESP2 value (the framing go-redis speaks with
// Protocol 2, https://redis.io/docs/latest/develop/reference/protocol-spec/)
// and returns its bytes as they came, so that a proxy forwards exactly what
// it read, and, for a request, the command's name in capitals.
func readRESP(r *bufio.Reader) (raw []byte, name string, err error) {
	var b strings.Builder
	if err := readValue(r, &b, 0, &name); err != nil {
		return nil, "", err
	}
	return []byte(b.String()), strings.ToUpper(name), nil
}

// maxRESPDepth and maxRESPBulk bound what a peer can make the proxy hold.
const (
	maxRESPDepth = 8
	maxRESPBulk  = 512 << 20
)

func readValue(r *bufio.Reader, b *strings.Builder, depth int, name *string) error {
	if depth > maxRESPDepth {
		return errors.New("resp: nested too deep")
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	if len(line) < 3 {
		return errors.New("resp: short line")
	}
	body := strings.TrimRight(line[1:], "\r\n")
	switch line[0] {
	case '+', '-', ':':
		return nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n > maxRESPBulk {
			return errors.New("resp: bad bulk length")
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := readFull(r, buf); err != nil {
			return err
		}
		b.Write(buf)
		if name != nil && *name == "" && depth == 1 {
			*name = string(buf[:n])
		}
		return nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n > 1<<20 {
			return errors.New("resp: bad array length")
		}
		for i := 0; i < n; i++ {
			nm := name
			if i > 0 {
				nm = nil
			}
			if err := readValue(r, b, depth+1, nm); err != nil {
				return err
			}
		}
		return nil
	}
	return errors.New("resp: unknown type " + strconv.Quote(line[:1]))
}

func readFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
