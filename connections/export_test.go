package connections

// Refresh is the single-flight refresh of a connection row read before,
// for the tests that cut the database between the read and the claim.
var Refresh = (*Service).refresh
