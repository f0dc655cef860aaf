package sim

// A message in the bubble (bubble.go): its event key and its draws come
// from its content, never from which racing goroutine sent it first.

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// contentRand is a random source seeded by the world's seed and a message's
// content: draws about a message do not depend on who sent first.
func (w *World) contentRand(key string) *rand.Rand {
	return rand.New(rand.NewPCG(w.Seed, fnv64a(key)))
}

// fnv64a is hash/fnv's 64-bit FNV-1a of s, without its allocations.
func fnv64a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// messageSource is a reusable contentRand.
type messageSource struct {
	pcg *rand.PCG
	r   *rand.Rand
}

// message keys m by its content and makes the draws about it come from
// that content.
func (b *bubble) message(m *Message) (key string, saved *rand.Rand) {
	key = b.messageKey(m)
	return key, b.messageRand(key)
}

func (b *bubble) endMessage(saved *rand.Rand) { b.endMessageRand(saved) }

// messageRand makes the world's source contentRand(key) for the draws
// about one message, and returns the source to give back with
// endMessageRand. The draws end before Network.Send or Judge returns, so
// the source is the bubble's own, reseeded per message instead of
// allocated (one per nesting level): the same draws, without the garbage.
func (b *bubble) messageRand(key string) (saved *rand.Rand) {
	w := b.w
	if b.msgDepth == len(b.msgRands) {
		pcg := rand.NewPCG(0, 0)
		b.msgRands = append(b.msgRands, &messageSource{pcg: pcg, r: rand.New(pcg)})
	}
	src := b.msgRands[b.msgDepth]
	b.msgDepth++
	src.pcg.Seed(w.Seed, fnv64a(key))
	saved = w.rng
	w.rng = src.r
	return saved
}

// endMessageRand gives the world's source back after a message's draws.
func (b *bubble) endMessageRand(saved *rand.Rand) {
	b.w.rng = saved
	b.msgDepth--
}

// messageKey orders a message by its content and draws its jitter and
// filter decisions from that content. stream is the connection it travels
// on (or who sent it); n counts the stream's messages. The key reads
// "to<from dir summary @stream#n".
func (b *bubble) messageKey(m *Message) string {
	stream := m.order
	if stream == "" {
		stream = b.who
		if stream == "" {
			stream = "kernel"
		}
	}
	c := b.msgs[stream] + 1
	b.msgs[stream] = c
	k := append(b.msgKey[:0], m.To...)
	k = append(k, '<')
	k = append(k, m.From...)
	k = append(k, ' ')
	k = append(k, m.Dir...)
	k = append(k, ' ')
	k = append(k, m.Summary...)
	k = append(k, " @"...)
	k = append(k, stream...)
	k = append(k, '#')
	k = strconv.AppendUint(k, c, 10)
	b.msgKey = k
	return string(k)
}

// arrival keeps each stream in order, as TCP does per connection.
func (b *bubble) arrival(m *Message, at time.Duration) time.Duration {
	stream := m.order + "|" + m.From + ">" + m.To
	if prev := b.fifo[stream]; at < prev {
		at = prev
	}
	b.fifo[stream] = at
	return at
}
