import Crypto
import CryptoExtras
import Foundation
import MBaaSCore

/// Input checks, the same the Local store makes (so a record either store accepts, the other accepts too). Each
/// throws ``MBaaSCore/MBaaSError/Kind/invalidRequest`` naming the problem before anything is written.
enum PostgresValidation {
    static let maxClassNameLength = 64

    /// `[A-Za-z_][A-Za-z0-9_]*`, at most 64 characters. Class names are values of the `class` column (bound), never
    /// identifiers; the rule keeps them portable to every other backend.
    static func className(_ name: String) throws(MBaaSError) {
        let bytes = name.utf8
        guard let first = bytes.first, isLetter(first) || first == UInt8(ascii: "_"), bytes.count <= maxClassNameLength,
              bytes.allSatisfy({ isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") })
        else {
            throw MBaaSError(.invalidRequest, "invalid class name '\(name)': use [A-Za-z_][A-Za-z0-9_]*, at most \(maxClassNameLength) characters")
        }
    }

    static func recordId(_ id: String) throws(MBaaSError) {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= 128, bytes.allSatisfy(isNameByte) else {
            throw MBaaSError(.invalidRequest, "invalid record id '\(id)': use 1 to 128 of [A-Za-z0-9_.-]").refusing(MBaaSError.recordIdKey)
        }
    }

    static func fieldName(_ name: String) throws(MBaaSError) {
        if Record.reservedFieldNames.contains(name) {
            throw MBaaSError(.invalidRequest,
                             "field name '\(name)' is reserved for record metadata (\(Record.reservedFieldNames.sorted().joined(separator: ", ")))")
        }
        let utf8 = name.utf8
        guard let first = utf8.first, first != UInt8(ascii: "$"),
              !utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "\"") || $0 < 0x20 }),
              utf8.count <= 128 || name.count <= 128
        else {
            throw MBaaSError(.invalidRequest,
                             "invalid field name '\(name)': must be 1 to 128 characters without '.', '\"', control characters or a leading '$'")
        }
    }

    static func version(_ text: String) throws(MBaaSError) {
        guard let n = UInt64(text), n >= 1, n <= UInt64(Int64.max) else {
            throw MBaaSError(.invalidRequest, "expected version '\(text)' is not a version of this store (versions are whole numbers from 1, as printed in a record's \"version\")")
        }
    }

    /// Finite numbers, GeoPoints in range, Pointers to a valid class, no `__type` member in a plain object, and no NUL
    /// character in a string (PostgreSQL's `jsonb` cannot hold `\u0000`).
    static func value(_ value: Value, path: String) throws(MBaaSError) {
        switch value {
        case .pointer(let p):
            do { try className(p.className) } catch { throw MBaaSError(.invalidRequest, "\(path): Pointer: \(error.message)") }
        case .double(let d) where !d.isFinite:
            throw MBaaSError(.invalidRequest, "\(path): \(d) cannot be stored (numbers must be finite)")
        case .geoPoint(let g) where !(-90...90).contains(g.latitude) || !(-180...180).contains(g.longitude):
            throw MBaaSError(.invalidRequest, "\(path): GeoPoint out of range (\(g.latitude), \(g.longitude))")
        case .string(let s) where s.utf8.contains(0):
            throw MBaaSError(.invalidRequest, "\(path): a string with a NUL character cannot be stored (PostgreSQL text holds none)")
        case .array(let items):
            for (i, item) in items.enumerated() { try self.value(item, path: "\(path)[\(i)]") }
        case .object(let members):
            if members["__type"] != nil {
                throw MBaaSError(.invalidRequest, "\(path): an object member named '__type' is reserved for typed values")
            }
            for (k, v) in members {
                if k.utf8.contains(0) { throw MBaaSError(.invalidRequest, "\(path): a member name with a NUL character cannot be stored") }
                try self.value(v, path: "\(path).\(k)")
            }
        default:
            break
        }
    }

    static func fields(_ fields: [String: Value]) throws(MBaaSError) {
        for (name, value) in fields {
            try fieldName(name)
            try self.value(value, path: name)
        }
    }

    static func principalName(_ name: String, kind: String) throws(MBaaSError) {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 64, bytes.allSatisfy(isNameByte) else {
            throw MBaaSError(.invalidRequest, "invalid \(kind) name '\(name)': use 1 to 64 of [A-Za-z0-9_.-]")
        }
    }

    static func fileName(_ name: String) throws(MBaaSError) {
        guard !name.isEmpty, name.count <= 1024, !name.unicodeScalars.contains("\u{0}") else {
            throw MBaaSError(.invalidRequest, "invalid file name '\(name)': must be 1 to 1024 characters without NUL")
        }
    }

    static func userName(_ username: String) throws(MBaaSError) {
        guard !username.isEmpty, username.count <= 128, !username.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw MBaaSError(.invalidRequest, "the user name must be 1 to 128 characters without control characters")
        }
    }

    private static func isLetter(_ b: UInt8) -> Bool { (65...90).contains(b) || (97...122).contains(b) }
    private static func isDigit(_ b: UInt8) -> Bool { (48...57).contains(b) }
    private static func isNameByte(_ b: UInt8) -> Bool {
        isLetter(b) || isDigit(b) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
    }
}

/// Random ids and tokens from the system's CSPRNG.
enum PostgresRandom {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    static func alphanumeric(_ count: Int) -> String {
        var g = SystemRandomNumberGenerator()
        return String(decoding: (0..<count).map { _ in alphabet[Int(g.next(upperBound: UInt64(alphabet.count)))] }, as: UTF8.self)
    }

    static func id() -> String { alphanumeric(16) }

    static func bytes(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
    }
}

/// Session tokens: 32 random bytes (base64url) given to the client; the database keeps only their SHA-256.
enum PostgresTokens {
    static func newToken() -> String {
        Data(PostgresRandom.bytes(32)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func hash(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// Password hashes in the Local store's format, `scrypt$<log2 N>$<r>$<p>$<salt base64>$<key base64>` (swift-crypto's
/// scrypt), so a migration between the two carries users' hashes and each store verifies the other's.
public enum PostgresPasswordHasher {
    public struct Parameters: Sendable, Hashable {
        public var logN: Int
        public var blockSize: Int
        public var parallelism: Int

        public init(logN: Int, blockSize: Int, parallelism: Int) {
            self.logN = logN
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        /// N = 2^15, r = 8, p = 3, the Local store's default.
        public static let `default` = Parameters(logN: 15, blockSize: 8, parallelism: 3)
        /// N = 2^11, r = 8, p = 1: throwaway data only (test servers).
        public static let light = Parameters(logN: 11, blockSize: 8, parallelism: 1)
    }

    static func hash(_ password: String, parameters: Parameters) throws(MBaaSError) -> String {
        let salt = PostgresRandom.bytes(16)
        let key = try derive(password, salt: salt, parameters, outputByteCount: 32)
        return ["scrypt", String(parameters.logN), String(parameters.blockSize), String(parameters.parallelism),
                Data(salt).base64EncodedString(), key.withUnsafeBytes { Data($0).base64EncodedString() }]
            .joined(separator: "$")
    }

    static func verify(_ password: String, against stored: String) throws(MBaaSError) -> Bool {
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

    private static func derive(_ password: String, salt: [UInt8], _ p: Parameters, outputByteCount: Int) throws(MBaaSError) -> SymmetricKey {
        guard !password.isEmpty else { throw MBaaSError(.invalidRequest, "the password is empty") }
        do {
            return try KDF.Scrypt.deriveKey(from: Array(password.utf8), salt: salt, outputByteCount: outputByteCount,
                                            rounds: 1 << p.logN, blockSize: p.blockSize, parallelism: p.parallelism)
        } catch {
            throw MBaaSError(.unavailable, "password hashing failed: \(error)")
        }
    }
}
