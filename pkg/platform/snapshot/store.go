package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is the default JetStream object-store bucket for snapshots.
const Bucket = "clopen-snapshots"

// ErrNotFound reports that a named object, manifest or path does not exist.
var ErrNotFound = errors.New("snapshot: not found")

// Store is where snapshots live: a flat namespace of named immutable
// objects. JetStream's object store is the default; an S3-compatible store
// can replace it. Implementations must be safe for concurrent use.
type Store interface {
	// Put stores r's content under name and returns how many bytes it stored.
	Put(ctx context.Context, name string, r io.Reader) (int64, error)
	// Get streams name's content; the error is ErrNotFound (errors.Is) when
	// there is no such object. The caller closes the reader.
	Get(ctx context.Context, name string) (io.ReadCloser, error)
	// Delete removes name; ErrNotFound when there is no such object.
	Delete(ctx context.Context, name string) error
	// List returns the objects whose names start with prefix, sorted by
	// name.
	List(ctx context.Context, prefix string) ([]Object, error)
}

// Object is one stored object as List reports it.
type Object struct {
	Name     string
	Size     int64
	Modified time.Time // when it was stored
}

// ObjectStore binds the JetStream object-store bucket, creating it (file
// storage, the given replicas) when it does not exist yet.
func ObjectStore(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (Store, error) {
	obs, err := js.ObjectStore(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      bucket,
			Description: "clopen workspace and session snapshots",
			Storage:     jetstream.FileStorage,
			Replicas:    max(replicas, 1),
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			// Another worker created it first.
			obs, err = js.ObjectStore(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", bucket, err)
	}
	return objectStore{obs: obs}, nil
}

type objectStore struct {
	obs jetstream.ObjectStore
}

func (s objectStore) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	info, err := s.obs.Put(ctx, jetstream.ObjectMeta{Name: name}, r)
	if err != nil {
		return 0, fmt.Errorf("put %s: %w", name, err)
	}
	return int64(info.Size), nil
}

func (s objectStore) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	res, err := s.obs.Get(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("get %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, err)
	}
	return res, nil
}

func (s objectStore) Delete(ctx context.Context, name string) error {
	err := s.obs.Delete(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("delete %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

func (s objectStore) List(ctx context.Context, prefix string) ([]Object, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	var objs []Object
	for _, info := range infos {
		if strings.HasPrefix(info.Name, prefix) {
			objs = append(objs, Object{Name: info.Name, Size: int64(info.Size), Modified: info.ModTime})
		}
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Name < objs[j].Name })
	return objs, nil
}

// Lazy returns a Store that opens the real one on first use and again on
// every use until an open succeeds, so a process can start before the
// bucket exists or the bus answers.
func Lazy(open func(ctx context.Context) (Store, error)) Store { return &lazy{open: open} }

type lazy struct {
	open func(ctx context.Context) (Store, error)
	mu   sync.Mutex
	s    Store
}

func (l *lazy) store(ctx context.Context) (Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s != nil {
		return l.s, nil
	}
	s, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	l.s = s
	return s, nil
}

func (l *lazy) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	s, err := l.store(ctx)
	if err != nil {
		return 0, err
	}
	return s.Put(ctx, name, r)
}

func (l *lazy) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	s, err := l.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, name)
}

func (l *lazy) Delete(ctx context.Context, name string) error {
	s, err := l.store(ctx)
	if err != nil {
		return err
	}
	return s.Delete(ctx, name)
}

func (l *lazy) List(ctx context.Context, prefix string) ([]Object, error) {
	s, err := l.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.List(ctx, prefix)
}
