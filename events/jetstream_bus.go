package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Defaults of JetStreamBusConfig.
const (
	DefaultStream  = "LEDGER"
	DefaultSubject = "ledger.>"
)

// JetStreamBusConfig describes the stream events are stored in.
type JetStreamBusConfig struct {
	// Stream is the stream name. Default "LEDGER".
	Stream string
	// Subjects the stream captures. Default ["ledger.>"]. Every event
	// name published must fall under them (the server refuses others).
	Subjects []string
	// Replicas of a created stream. Default 1.
	Replicas int
	// Duplicates is the de-duplication window of a created stream: a
	// repeated publish of the same write within it is dropped. Default
	// 2 minutes. Relays that may lag longer need a longer window.
	Duplicates time.Duration
	// MaxAge bounds how long events are kept. Default 0: forever.
	MaxAge time.Duration
	// Storage defaults to file storage.
	Storage jetstream.StorageType
	// SubjectPrefix goes before every event's subject, so that a stream
	// of its own (a demo run, a tenant) does not overlap the subjects of
	// the default stream: an event named "ledger.admitted" is published
	// on SubjectPrefix + "ledger.admitted", and Subjects defaults to
	// SubjectPrefix + "ledger.>". The event body keeps its Name. It must
	// end with "." unless empty. Default "".
	SubjectPrefix string
}

// JetStreamBus publishes events to a JetStream stream: each event on the
// subject named by its Name (for example "ledger.admitted"), with
// Nats-Msg-Id = MsgID(e), so republishing a write is de-duplicated by
// the stream. Core subscribers on "ledger.>" see every publish, durable
// consumers see each write once. It is safe for concurrent use.
type JetStreamBus struct {
	js     jetstream.JetStream
	stream string
	prefix string
}

var _ Bus = (*JetStreamBus)(nil)

// NewJetStreamBus creates the stream described by cfg, or binds it when
// it exists (its configuration is then left as it is).
func NewJetStreamBus(ctx context.Context, js jetstream.JetStream, cfg JetStreamBusConfig) (*JetStreamBus, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil JetStream", ErrInvalidConfig)
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	if strings.ContainsAny(cfg.Stream, ".*> \t") {
		return nil, fmt.Errorf("%w: stream name %q", ErrInvalidConfig, cfg.Stream)
	}
	if p := cfg.SubjectPrefix; p != "" && (!strings.HasSuffix(p, ".") || !Name(p+"x").Valid()) {
		return nil, fmt.Errorf("%w: subject prefix %q (tokens ending with \".\")", ErrInvalidConfig, p)
	}
	if len(cfg.Subjects) == 0 {
		cfg.Subjects = []string{cfg.SubjectPrefix + DefaultSubject}
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Duplicates == 0 {
		cfg.Duplicates = 2 * time.Minute
	}
	if cfg.Replicas < 0 || cfg.Duplicates < 0 || cfg.MaxAge < 0 {
		return nil, fmt.Errorf("%w: negative Replicas, Duplicates or MaxAge", ErrInvalidConfig)
	}
	// Each request is bounded by the operation timeout and sent again
	// when unanswered (a lookup, or a create with a fixed configuration,
	// is idempotent): on a cluster whose meta leader moves, one lost
	// answer held the call for all of ctx.
	err := kvx.Idempotent(ctx, kvx.OpTimeoutOf(js), func(ctx context.Context) error {
		_, err := js.Stream(ctx, cfg.Stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			_, err = js.CreateStream(ctx, jetstream.StreamConfig{
				Name:       cfg.Stream,
				Subjects:   cfg.Subjects,
				Replicas:   cfg.Replicas,
				Duplicates: cfg.Duplicates,
				MaxAge:     cfg.MaxAge,
				Storage:    cfg.Storage,
				// Shown by `nats stream info`: whose stream this is.
				Description: "natscoord events: ledger transitions, one per write (Nats-Msg-Id source/key/revision)",
			})
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				_, err = js.Stream(ctx, cfg.Stream) // lost a creation race
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("events: stream %q: %w", cfg.Stream, err)
	}
	return &JetStreamBus{js: js, stream: cfg.Stream, prefix: cfg.SubjectPrefix}, nil
}

// Stream returns the stream name.
func (b *JetStreamBus) Stream() string { return b.stream }

// codeDuplicateInProcess is JetStream's "duplicate message id is in
// process" (JSStreamDuplicateMessageConflict): on a replicated stream, a
// publish whose Nats-Msg-Id matches one still being replicated. It says
// nothing yet about whether the event is stored.
const codeDuplicateInProcess = 10158

// Publish stores e and returns once the stream acknowledged it (or
// reported it as a duplicate, which is success too). When another publish
// of the same event is still in flight on a replicated stream (a writer
// and a relay publishing the same write), it asks again after a moment
// until the stream reports the event stored or a duplicate.
func (b *JetStreamBus) Publish(ctx context.Context, e Event) error {
	msg, err := b.message(e)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		_, err = b.js.PublishMsg(ctx, msg)
		var apiErr *jetstream.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode != codeDuplicateInProcess || attempt == 7 {
			break
		}
		t := time.NewTimer(time.Duration(5<<attempt) * time.Millisecond) // 5 ms .. 320 ms
		select {
		case <-ctx.Done():
			t.Stop()
			return publishError(e, errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
	if err != nil {
		return publishError(e, err)
	}
	return nil
}

// message builds the one publish of e that Publish and PublishAsync send:
// on the subject its Name gives (after SubjectPrefix), with
// Nats-Msg-Id = MsgID(e) so the stream drops a repeat, and expecting
// this bus's stream so that no other stream capturing the subject takes
// it.
func (b *JetStreamBus) message(e Event) (*nats.Msg, error) {
	data, err := Marshal(e)
	if err != nil {
		return nil, err
	}
	// The headers are set here rather than by jetstream.WithMsgID and
	// WithExpectStream: with no options nats.go skips building them per
	// publish (an options struct and canonicalised Header.Set calls), a
	// few percent of a runtime that publishes four events per task.
	return &nats.Msg{Subject: b.prefix + string(e.Name), Data: data, Header: nats.Header{
		jetstream.MsgIDHeader:          []string{MsgID(e)},
		jetstream.ExpectedStreamHeader: []string{b.stream},
	}}, nil
}

func publishError(e Event, err error) error {
	return fmt.Errorf("events: publish %s %q revision %d: %w", e.Name, e.Key, e.Revision, err)
}
