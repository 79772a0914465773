public import Crypto
public import Foundation
public import MBaaSCore

/// Encrypts the ``ReplicaPolicy/encryptedFields`` of a class at rest: each value (and each queued operation on such a
/// field) is sealed with AES-GCM under the app's 256-bit key and stored as `{"__replicaSealed":{"__type":"Bytes",…}}`.
///
/// # Contract
/// - The key is never stored in the replica.
/// - Opening a value without the key, or with another key, is an error naming the field (`unauthorized`), never the
///   ciphertext passed off as a value.
public struct ReplicaCipher: Sendable {
    public let key: SymmetricKey

    /// A 256-bit key.
    public init(key: SymmetricKey) throws(MBaaSError) {
        guard key.bitCount == 256 else {
            throw MBaaSError(.invalidRequest, "a replica key has 256 bits (32 bytes), this one has \(key.bitCount)")
        }
        self.key = key
    }

    /// A key given as base64 text (`MBAAS_REPLICA_KEY`, a key file): 32 bytes once decoded.
    public init(base64 text: String) throws(MBaaSError) {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw MBaaSError(.invalidRequest, "the replica key is not base64 (give 32 random bytes in base64: openssl rand -base64 32)")
        }
        try self.init(key: SymmetricKey(data: data))
    }

    /// The environment variable holding a replica key in base64.
    public static let environmentVariable = "MBAAS_REPLICA_KEY"

    /// The key in `MBAAS_REPLICA_KEY`, `nil` when unset; a value that is not a 256-bit base64 key is `invalidRequest`.
    public static func fromEnvironment() throws(MBaaSError) -> ReplicaCipher? {
        guard let text = ProcessInfo.processInfo.environment[environmentVariable], !text.isEmpty else { return nil }
        do { return try ReplicaCipher(base64: text) } catch {
            throw MBaaSError(.invalidRequest, "$\(environmentVariable): \(error.message)")
        }
    }

    static let marker = "__replicaSealed"

    func seal(_ json: JSON) throws(MBaaSError) -> JSON {
        do {
            let box = try AES.GCM.seal(Data(json.printed().utf8), using: key)
            guard let combined = box.combined else { throw MBaaSError(.internal, "AES-GCM gave no combined box") }
            return .object([Self.marker: Value.bytes(combined).json])
        } catch let e as MBaaSError { throw e } catch {
            throw MBaaSError(.internal, "cannot encrypt a field: \(error)")
        }
    }

    static func isSealed(_ json: JSON) -> Bool {
        guard let o = json.objectValue, o.count == 1, o[marker] != nil else { return false }
        return true
    }

    func open(_ json: JSON, field: String) throws(MBaaSError) -> JSON {
        guard let inner = json.objectValue?[Self.marker], case .bytes(let data)? = try? Value(json: inner) else {
            return json
        }
        do {
            let plain = try AES.GCM.open(AES.GCM.SealedBox(combined: data), using: key)
            return try JSON.parse(plain)
        } catch {
            throw MBaaSError(.unauthorized, "the encrypted field '\(field)' cannot be opened with this key (the replica was written with another)")
        }
    }
}

/// Seals and opens the encrypted fields of records and queued changes; without a cipher, opening a sealed value throws.
struct ReplicaSealing: Sendable {
    let cipher: ReplicaCipher?

    func sealFields(_ fields: [String: Value], encrypted: Set<String>) throws(MBaaSError) -> [String: Value] {
        guard !encrypted.isEmpty else { return fields }
        var out = fields
        for name in encrypted {
            guard let value = fields[name] else { continue }
            out[name] = try Value(json: try sealJSON(value.json, field: name))
        }
        return out
    }

    func sealJSON(_ json: JSON, field: String) throws(MBaaSError) -> JSON {
        guard let cipher else {
            throw MBaaSError(.unauthorized, "the field '\(field)' is encrypted at rest: open the replica with its key (MBAAS_REPLICA_KEY or --key-file)")
        }
        return try cipher.seal(json)
    }

    func openJSON(_ json: JSON, field: String) throws(MBaaSError) -> JSON {
        guard ReplicaCipher.isSealed(json) else { return json }
        guard let cipher else {
            throw MBaaSError(.unauthorized, "the field '\(field)' is encrypted at rest: open the replica with its key (MBAAS_REPLICA_KEY or --key-file)")
        }
        return try cipher.open(json, field: field)
    }

    func openFields(_ fields: [String: Value]) throws(MBaaSError) -> [String: Value] {
        var out = fields
        for (name, value) in fields {
            guard case .object(let o) = value, o.count == 1, o[ReplicaCipher.marker] != nil else { continue }
            out[name] = try Value(json: try openJSON(value.json, field: name))
        }
        return out
    }

    func openRecord(_ record: Record) throws(MBaaSError) -> Record {
        var r = record
        r.fields = try openFields(record.fields)
        return r
    }
}
