public import MBaaSCore

extension ScryptPasswordHash.Parameters {
    /// N = 2^4, r = 8, p = 1: no protection at all, for tests only. Tests that sign users up and log them in by the
    /// hundred (every conformance scenario with fixture users, on a fresh store) spent most of a debug run's CPU in
    /// scrypt even at ``MBaaSCore/ScryptPasswordHash/Parameters/light`` (BoringSSL is compiled unoptimised in a debug
    /// build); what they check does not depend on the cost. Never for a store that keeps real users' passwords.
    public static let testing = ScryptPasswordHash.Parameters(logN: 4, blockSize: 8, parallelism: 1)
}
