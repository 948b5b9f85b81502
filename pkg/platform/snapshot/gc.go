package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultGrace is how old an unreferenced object must be before a
// collection deletes it. A capture stores its packs, then its manifest, and
// only then does the run that took it record the manifest; a collection
// running in between must not take them.
const DefaultGrace = 24 * time.Hour

// GC deletes what no session, checkpoint or project needs any more: the
// manifests Live does not name and the packs no kept manifest refers to,
// once they are older than Grace.
type GC struct {
	Store Store
	// Live returns the ids of tenant's manifests something still needs:
	// every run's snapshot (each turn is a checkpoint), the snapshot each
	// run started from, sessions' and projects' bases.
	Live   func(ctx context.Context, tenant string) (map[string]bool, error)
	Grace  time.Duration // 0 means DefaultGrace
	DryRun bool          // count what would go, delete nothing
	Now    func() time.Time
}

// GCStats is what a collection found and deleted (or, dry, would delete).
type GCStats struct {
	Tenants          int
	Manifests, Packs int   // objects seen
	DeletedManifests int   // unreferenced manifests past the grace period
	DeletedPacks     int   // packs no kept manifest refers to
	Freed            int64 // bytes of the deleted objects
}

// Collect runs one collection over every tenant in the store. A tenant
// whose kept manifests cannot all be read keeps all its packs, since what
// they refer to is then unknown; the error is returned after the other
// tenants are done.
func (g GC) Collect(ctx context.Context) (GCStats, error) {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	grace := g.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	cutoff := now().Add(-grace)
	objs, err := g.Store.List(ctx, "")
	if err != nil {
		return GCStats{}, err
	}
	byTenant := map[string][]Object{}
	var tenants []string
	for _, o := range objs {
		tenant, _, ok := strings.Cut(o.Name, "/")
		if !ok || validTenant(tenant) != nil {
			continue // not a snapshot object; never touched
		}
		if _, seen := byTenant[tenant]; !seen {
			tenants = append(tenants, tenant)
		}
		byTenant[tenant] = append(byTenant[tenant], o)
	}
	var st GCStats
	var errs []error
	for _, tenant := range tenants {
		st.Tenants++
		if err := g.collectTenant(ctx, tenant, byTenant[tenant], cutoff, &st); err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", tenant, err))
		}
	}
	return st, errors.Join(errs...)
}

func (g GC) collectTenant(ctx context.Context, tenant string, objs []Object, cutoff time.Time, st *GCStats) error {
	live, err := g.Live(ctx, tenant)
	if err != nil {
		return fmt.Errorf("live snapshots: %w", err)
	}
	s := &Snapshots{Store: g.Store, Tenant: tenant}
	manifestPrefix, packPrefix := manifestName(tenant, ""), packName(tenant, "")
	var packs []Object
	var dead []Object
	used := map[string]bool{}
	unreadable := 0
	for _, o := range objs {
		switch {
		case strings.HasPrefix(o.Name, packPrefix):
			st.Packs++
			packs = append(packs, o)
		case strings.HasPrefix(o.Name, manifestPrefix):
			st.Manifests++
			id := strings.TrimPrefix(o.Name, manifestPrefix)
			if !live[id] && o.Modified.Before(cutoff) {
				dead = append(dead, o)
				continue
			}
			m, err := s.Load(ctx, id)
			if err != nil {
				unreadable++
				continue
			}
			for _, entries := range m.Trees {
				for _, e := range entries {
					if e.Pack != "" {
						used[e.Pack] = true
					}
				}
			}
		}
	}
	for _, o := range dead {
		if err := g.delete(ctx, o, st); err != nil {
			return err
		}
		st.DeletedManifests++
	}
	if unreadable > 0 {
		return fmt.Errorf("%d kept manifest(s) could not be read; the tenant's packs are all kept", unreadable)
	}
	for _, o := range packs {
		if used[strings.TrimPrefix(o.Name, packPrefix)] || !o.Modified.Before(cutoff) {
			continue
		}
		if err := g.delete(ctx, o, st); err != nil {
			return err
		}
		st.DeletedPacks++
	}
	return nil
}

func (g GC) delete(ctx context.Context, o Object, st *GCStats) error {
	if !g.DryRun {
		if err := g.Store.Delete(ctx, o.Name); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	st.Freed += o.Size
	return nil
}
