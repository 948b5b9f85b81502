package snapshot

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
)

func (c *capture) packSize() int64 {
	if c.s.PackSize > 0 {
		return c.s.PackSize
	}
	return defaultPackSize
}

func (c *capture) spool() error {
	if c.pack != nil {
		return nil
	}
	f, err := os.CreateTemp("", "snapshot-pack-*")
	if err != nil {
		return fmt.Errorf("pack spool: %w", err)
	}
	c.pack, c.packOf = f, map[string]string{}
	return nil
}

// flush names the spooled pack by its sha256 and puts it.
func (c *capture) flush(ctx context.Context) error {
	if c.pack == nil || c.packLen == 0 {
		return nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(c.pack, 0, c.packLen)); err != nil {
		return fmt.Errorf("hash pack: %w", err)
	}
	sha := hexSum([sha256.Size]byte(h.Sum(nil)))
	n, err := c.s.Store.Put(ctx, packName(c.s.Tenant, sha), io.NewSectionReader(c.pack, 0, c.packLen))
	if err != nil {
		return fmt.Errorf("put pack: %w", err)
	}
	c.st.Uploaded += n
	c.st.Packs++
	for _, p := range c.pending {
		c.packOf[p] = sha
		k := c.known[p]
		k.Pack = sha
		c.known[p] = k
	}
	c.pending = c.pending[:0]
	c.packLen = 0
	if err := c.pack.Truncate(0); err != nil {
		return err
	}
	_, err = c.pack.Seek(0, io.SeekStart)
	return err
}

func (c *capture) close() {
	if c.pack != nil {
		c.pack.Close()
		os.Remove(c.pack.Name())
	}
}
