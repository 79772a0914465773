public import Foundation
import Crypto
import CryptoExtras

/// Random identifiers and bytes from a cryptographically secure generator (BoringSSL's, through swift-crypto: one
/// call per 32 bytes instead of a system call per draw), for server stores' ids, salts and tokens.
public enum SecureRandom {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// `count` random alphanumerics (62 symbols; rejection sampling keeps them unbiased).
    public static func alphanumeric(_ count: Int) -> String {
        var out = [UInt8]()
        out.reserveCapacity(count)
        while out.count < count {
            for byte in bytes(32) where byte < 248 && out.count < count {   // 248 = 4 × 62
                out.append(alphabet[Int(byte % 62)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A record or user id: 16 random alphanumerics (about 95 bits).
    public static func id() -> String { alphanumeric(16) }

    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(count)
        while out.count < count {
            SymmetricKey(size: .bits256).withUnsafeBytes { out.append(contentsOf: $0.prefix(count - out.count)) }
        }
        return out
    }
}

/// Session tokens of the server stores: 32 random bytes (base64url) given to the client; a store keeps only their
/// SHA-256 (``hash(_:)``), so a copy of the database holds no usable token.
public enum SessionTokens {
    /// A new token: 43 characters of base64url.
    public static func newToken() -> String {
        Data(SecureRandom.bytes(32)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Lowercase hex SHA-256 of the text.
    public static func hash(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).lowercaseHex
    }
}

/// Salted, deliberately slow password hashes with scrypt (swift-crypto's `KDF.Scrypt`, BoringSSL underneath), in
/// the one format every server store of this package writes and reads (a hash one store made, the other verifies).
///
/// Stored form: `scrypt$<log2 N>$<r>$<p>$<salt base64>$<key base64>`: every hash keeps the parameters it was made
/// with, so the cost can be raised later without breaking old passwords. Verification derives the key again and
/// compares in constant time (`SymmetricKey ==`).
public enum ScryptPasswordHash {
    /// scrypt cost parameters.
    public struct Parameters: Sendable, Hashable {
        /// log2 of the CPU/memory cost N.
        public var logN: Int
        /// The block size r.
        public var blockSize: Int
        /// The parallelism p.
        public var parallelism: Int

        public init(logN: Int, blockSize: Int, parallelism: Int) {
            self.logN = logN
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        /// N = 2^15, r = 8, p = 3: 32 MiB and roughly 0.1–0.3 s per hash, one of OWASP's recommended
        /// equivalents for scrypt.
        public static let `default` = Parameters(logN: 15, blockSize: 8, parallelism: 3)

        /// N = 2^11, r = 8, p = 1: 2 MiB and about a millisecond per hash (release build). For throwaway data
        /// only (test servers, an in-memory emulator), where sign-ups and log-ins must be cheap; never for a store
        /// that keeps real users' passwords.
        public static let light = Parameters(logN: 11, blockSize: 8, parallelism: 1)
    }

    static let saltBytes = 16
    static let keyBytes = 32

    /// A new hash of `password` with a random salt. An empty password is ``MBaaSError/Kind/invalidRequest``.
    public static func hash(_ password: String, parameters: Parameters) throws(MBaaSError) -> String {
        let salt = SecureRandom.bytes(saltBytes)
        let key = try derive(password, salt: salt, parameters, outputByteCount: keyBytes)
        return ["scrypt", String(parameters.logN), String(parameters.blockSize), String(parameters.parallelism),
                Data(salt).base64EncodedString(), key.withUnsafeBytes { Data($0).base64EncodedString() }]
            .joined(separator: "$")
    }

    /// Whether `password` matches a stored hash (constant-time comparison). A stored text not in the format is
    /// ``MBaaSError/Kind/decoding``.
    public static func verify(_ password: String, against stored: String) throws(MBaaSError) -> Bool {
        let parts = stored.split(separator: "$").map(String.init)
        guard parts.count == 6, parts[0] == "scrypt", let logN = Int(parts[1]), let r = Int(parts[2]), let p = Int(parts[3]),
              (1...24).contains(logN), let salt = Data(base64Encoded: parts[4]), let expected = Data(base64Encoded: parts[5])
        else {
            throw MBaaSError(.decoding, "a stored password hash is not in the scrypt format")
        }
        let derived = try derive(password, salt: Array(salt), Parameters(logN: logN, blockSize: r, parallelism: p),
                                 outputByteCount: expected.count)
        return derived == SymmetricKey(data: expected)
    }

    /// ``hash(_:parameters:)`` off the caller's thread (``BlockingWork``: at most one hash per processor at a time), so
    /// that a server's event loops keep serving while it runs. What a store's sign-up calls.
    public static func hash(_ password: String, parameters: Parameters) async throws(MBaaSError) -> String {
        try await BlockingWork.run { () throws(MBaaSError) in try hash(password, parameters: parameters) }
    }

    /// ``verify(_:against:)`` off the caller's thread, as the async `hash(_:parameters:)` is. What a store's log-in calls.
    public static func verify(_ password: String, against stored: String) async throws(MBaaSError) -> Bool {
        try await BlockingWork.run { () throws(MBaaSError) in try verify(password, against: stored) }
    }

    private static func derive(_ password: String, salt: [UInt8], _ p: Parameters, outputByteCount: Int)
        throws(MBaaSError) -> SymmetricKey
    {
        guard !password.isEmpty else { throw MBaaSError(.invalidRequest, "the password is empty") }
        do {
            return try KDF.Scrypt.deriveKey(
                from: Array(password.utf8), salt: salt, outputByteCount: outputByteCount, rounds: 1 << p.logN,
                blockSize: p.blockSize, parallelism: p.parallelism)
        } catch {
            throw MBaaSError(.unavailable, "password hashing failed: \(error)")
        }
    }
}
