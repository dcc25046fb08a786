package dynamo

import (
	"context"
	"time"
)

// ChannelHolder reads channel's lease consistently (Channel) as internal/stellar's LeaseReader
// wants it: its owner, when the lease ends without a release, and its quarantine.
// transfer.ErrNotFound when the channel is free. The fee account check before sending reads the
// other channels' leases with it when the fee account is close to its reserve.
func (c *ChannelLeases) ChannelHolder(ctx context.Context, channel string) (string, time.Time, time.Time, error) {
	l, err := c.Channel(ctx, channel)
	if err != nil {
		return "", time.Time{}, time.Time{}, err
	}
	return l.Owner, l.LeaseExpiresAt, l.QuarantinedUntil, nil
}
