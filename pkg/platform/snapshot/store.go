package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

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
	// List returns the names that start with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
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

func (s objectStore) List(ctx context.Context, prefix string) ([]string, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	var names []string
	for _, info := range infos {
		if strings.HasPrefix(info.Name, prefix) {
			names = append(names, info.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}
