package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// serverLogger adapts nats-server's Logger interface to log/slog.
//
// It always records the first fatal message, whether or not a slog logger
// was configured: nats-server reports "cannot listen" or "cannot start
// JetStream" only through Fatalf, and Start turns that message into its
// error. It never exits the process (nats-server's own logger would).
type serverLogger struct {
	log  *slog.Logger // nil = silent
	name string

	mu    sync.Mutex
	fatal string
}

func (l *serverLogger) emit(level slog.Level, format string, v []any) {
	if l.log == nil || !l.log.Enabled(context.Background(), level) {
		return
	}
	l.log.Log(context.Background(), level, fmt.Sprintf(format, v...), "server", l.name)
}

func (l *serverLogger) Noticef(format string, v ...any) { l.emit(slog.LevelInfo, format, v) }
func (l *serverLogger) Warnf(format string, v ...any)   { l.emit(slog.LevelWarn, format, v) }
func (l *serverLogger) Errorf(format string, v ...any)  { l.emit(slog.LevelError, format, v) }
func (l *serverLogger) Debugf(format string, v ...any)  { l.emit(slog.LevelDebug, format, v) }
func (l *serverLogger) Tracef(format string, v ...any)  { l.emit(slog.LevelDebug-4, format, v) }

func (l *serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	if l.fatal == "" {
		l.fatal = msg
	}
	l.mu.Unlock()
	l.emit(slog.LevelError, format, v)
}

func (l *serverLogger) fatalMessage() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}
