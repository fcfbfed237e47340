package kvlease

// OwnerHash returns the hex SHA-256 of the guard's owner secret: the value
// stored as Holder.OwnerHash while this guard holds the lease. It is public
// information (anyone reading the bucket sees it), not a credential.
//
// Packages layered on kvlease use it to tie a record they write next to a
// lease (kvlock's election value) to one ownership interval: a reader
// trusts the record only while the live lease names the same owner, so a
// record left behind by an earlier holder is never mistaken for the
// current one.
func (g *Guard) OwnerHash() string { return g.owner }
