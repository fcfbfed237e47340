package embedded

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configures one embedded server. The zero value is a usable
// single-node JetStream server on 127.0.0.1, a free port, and a temporary
// data directory that is removed on Shutdown.
type Options struct {
	// DataDir holds JetStream's files. Empty means a fresh temporary
	// directory removed on Shutdown; a set directory is created if missing
	// and kept, so starting again on it keeps every stream and KV value.
	DataDir string

	// Host is the client listen address. Default "127.0.0.1": the server is
	// reachable from this machine only unless you ask for more (for example
	// "0.0.0.0").
	Host string

	// Port is the client port. 0 (the default) picks a free port; read the
	// result from Server.ClientURL.
	Port int

	// InProcessOnly starts no network listener at all: clients connect
	// through Server.Connect only. Default false.
	InProcessOnly bool

	// ServerName names the server in logs and cluster metadata. Default
	// "natscoord-" followed by a random id.
	ServerName string

	// JetStreamMaxMemory and JetStreamMaxStore cap JetStream's memory and
	// file storage in bytes. 0 (the default) leaves nats-server's own
	// defaults (75% of RAM, 1 TB or free disk); negative values are invalid.
	JetStreamMaxMemory int64
	JetStreamMaxStore  int64

	// SyncAlways makes JetStream fsync every write before acknowledging it.
	// Default false: writes are flushed every SyncInterval, and an OS crash
	// or power loss (not a process crash) can lose acknowledged writes from
	// that window. SyncAlways closes that window at a large throughput cost
	// (BENCHMARKS.md measures it).
	SyncAlways bool

	// SyncInterval is the background fsync interval when SyncAlways is
	// false. 0 means nats-server's default (2 minutes); negative is
	// invalid, and so is setting it together with SyncAlways.
	SyncInterval time.Duration

	// Auth configures client authentication. The zero value accepts any
	// client (suitable for loopback development only).
	Auth Auth

	// TLS, when non-nil, requires TLS from every client.
	TLS *TLS

	// Logger receives the server's log lines. Nil (the default) is silent.
	Logger *slog.Logger

	// ReadyTimeout bounds how long Start waits for the server to accept
	// connections. Default 10s.
	ReadyTimeout time.Duration

	// cluster is set by StartCluster only.
	cluster *clusterNode
}

// Auth configures client authentication. Set at most one of: User and
// Password, Token, or Users/NKeys (which may be combined).
type Auth struct {
	User     string
	Password string
	Token    string
	// Users lists password users, each with optional permissions.
	Users []User
	// NKeys lists the public keys (starting with "U") of nkey users.
	NKeys []string
}

// User is one password user with optional subject permissions. Nil allow
// lists mean "everything"; an empty non-nil list means "nothing".
type User struct {
	Name      string
	Password  string
	Publish   []string
	Subscribe []string
}

// TLS points at PEM files for the server's certificate. CAFile, when set,
// is also used by Server.Connect to verify the server.
type TLS struct {
	CertFile string
	KeyFile  string
	CAFile   string
	// VerifyClients requires client certificates signed by CAFile.
	VerifyClients bool
}

func invalid(format string, v ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, v...))
}

// validate checks o and fills defaults. It performs no network I/O beyond
// probing that a fixed port is free, so a bad option is reported before
// any server goroutine starts.
func (o *Options) validate() error {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port < 0 || o.Port > 65535 {
		return invalid("port %d out of range", o.Port)
	}
	if o.JetStreamMaxMemory < 0 {
		return invalid("negative JetStreamMaxMemory %d", o.JetStreamMaxMemory)
	}
	if o.JetStreamMaxStore < 0 {
		return invalid("negative JetStreamMaxStore %d", o.JetStreamMaxStore)
	}
	if o.SyncInterval < 0 {
		return invalid("negative SyncInterval %s", o.SyncInterval)
	}
	if o.ReadyTimeout < 0 {
		return invalid("negative ReadyTimeout %s", o.ReadyTimeout)
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 10 * time.Second
	}
	if o.Auth.User == "" && o.Auth.Password != "" {
		return invalid("password without user")
	}
	if o.Auth.Token != "" && o.Auth.User != "" {
		return invalid("set either a token or a user, not both")
	}
	if (o.Auth.User != "" || o.Auth.Token != "") && (len(o.Auth.Users) > 0 || len(o.Auth.NKeys) > 0) {
		// nats-server would silently ignore User/Token next to a users list.
		return invalid("User or Token cannot be combined with Users or NKeys")
	}
	seen := make(map[string]bool, len(o.Auth.Users))
	for _, u := range o.Auth.Users {
		if u.Name == "" {
			return invalid("user with an empty name")
		}
		if seen[u.Name] {
			return invalid("duplicate user %q", u.Name)
		}
		seen[u.Name] = true
	}
	for _, k := range o.Auth.NKeys {
		if !strings.HasPrefix(k, "U") {
			return invalid("nkey %q is not a user public key (starts with U)", k)
		}
	}
	if o.SyncAlways && o.SyncInterval != 0 {
		return invalid("set SyncAlways or SyncInterval, not both")
	}
	if o.TLS != nil {
		if o.TLS.CertFile == "" || o.TLS.KeyFile == "" {
			return invalid("TLS needs CertFile and KeyFile")
		}
		for _, f := range []string{o.TLS.CertFile, o.TLS.KeyFile, o.TLS.CAFile} {
			if f == "" {
				continue
			}
			if _, err := os.Stat(f); err != nil {
				return invalid("TLS file: %v", err)
			}
		}
		if o.TLS.VerifyClients && o.TLS.CAFile == "" {
			return invalid("VerifyClients needs CAFile")
		}
	}
	if o.DataDir != "" {
		if err := checkWritableDir(o.DataDir); err != nil {
			return invalid("data dir: %v", err)
		}
	}
	if o.Port != 0 && !o.InProcessOnly {
		l, err := net.Listen("tcp", net.JoinHostPort(o.Host, fmt.Sprint(o.Port)))
		if err != nil {
			return invalid("port %d: %v", o.Port, err)
		}
		_ = l.Close()
	}
	return nil
}

func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".natscoord-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// serverOptions translates validated Options into nats-server options.
func (o *Options) serverOptions(storeDir string) (*server.Options, error) {
	so := &server.Options{
		ServerName:         o.ServerName,
		Host:               o.Host,
		Port:               o.Port,
		DontListen:         o.InProcessOnly,
		NoLog:              o.Logger == nil,
		NoSigs:             true,
		JetStream:          true,
		JetStreamMaxMemory: o.JetStreamMaxMemory,
		JetStreamMaxStore:  o.JetStreamMaxStore,
		StoreDir:           filepath.Clean(storeDir),
		SyncAlways:         o.SyncAlways,
		SyncInterval:       o.SyncInterval,
	}
	if so.Port == 0 {
		so.Port = server.RANDOM_PORT
	}
	if o.InProcessOnly {
		so.Port = server.RANDOM_PORT
	}
	if so.JetStreamMaxMemory == 0 {
		so.JetStreamMaxMemory = -1 // nats-server's "use default"
	}
	if so.JetStreamMaxStore == 0 {
		so.JetStreamMaxStore = -1
	}
	a := o.Auth
	so.Username, so.Password, so.Authorization = a.User, a.Password, a.Token
	for _, u := range a.Users {
		su := &server.User{Username: u.Name, Password: u.Password}
		if u.Publish != nil || u.Subscribe != nil {
			su.Permissions = &server.Permissions{}
			if u.Publish != nil {
				su.Permissions.Publish = allowOnly(u.Publish)
			}
			if u.Subscribe != nil {
				su.Permissions.Subscribe = allowOnly(u.Subscribe)
			}
		}
		so.Users = append(so.Users, su)
	}
	for _, k := range a.NKeys {
		so.Nkeys = append(so.Nkeys, &server.NkeyUser{Nkey: k})
	}
	if o.TLS != nil {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: o.TLS.CertFile,
			KeyFile:  o.TLS.KeyFile,
			CaFile:   o.TLS.CAFile,
			Verify:   o.TLS.VerifyClients,
		})
		if err != nil {
			return nil, invalid("TLS: %v", err)
		}
		so.TLSConfig = tc
		so.TLS = true
		so.TLSVerify = o.TLS.VerifyClients
		so.TLSTimeout = 2
	}
	if c := o.cluster; c != nil {
		so.Cluster = server.ClusterOpts{Name: c.name, Host: "127.0.0.1", Port: c.port, Advertise: c.advertise}
		so.Routes = c.routes
	}
	return so, nil
}

// allowOnly turns an allow list into a server permission. nats-server reads
// an empty Allow as "no restriction", so "nothing" is spelled as denying
// every subject.
func allowOnly(subjects []string) *server.SubjectPermission {
	if len(subjects) == 0 {
		return &server.SubjectPermission{Deny: []string{">"}}
	}
	return &server.SubjectPermission{Allow: subjects}
}
