package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// noBucketError is an inspection's error for a bucket that does not exist
// (inspections bind, they never create).
type noBucketError struct{ bucket string }

func (e noBucketError) Error() string { return fmt.Sprintf("bucket %q does not exist", e.bucket) }

// defaultBucketMissing reports whether err is a missing bucket that the
// user did not name: the default bucket of a listing, which simply has
// nothing in it yet (nothing was ever leased on this server). A bucket
// named with --bucket that does not exist stays an error, since it is
// more likely a typo than an empty bucket.
func defaultBucketMissing(cmd *cobra.Command, err error) bool {
	var nb noBucketError
	return errors.As(err, &nb) && !cmd.Flags().Changed("bucket")
}
