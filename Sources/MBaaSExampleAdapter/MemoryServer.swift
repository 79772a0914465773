import Foundation
import MBaaSCore

/// The shared state: records by class and id, files by name, users by name, sessions by token.
public actor MemoryServer {
    var classes: [String: [String: (seq: Int, record: Record)]] = [:]
    var files: [String: (data: Data, info: FileInfo)] = [:]
    var users: [String: (id: String, password: String)] = [:]
    var tokens: [String: String] = [:]
    private var counter = 0

    public init() {}

    func nextID(_ prefix: Character) -> (String, Int) {
        counter += 1
        return (String(prefix) + String(repeating: "0", count: 14 - String(counter).count) + String(counter), counter)
    }
    func put(_ record: Record, seq: Int) { classes[record.className, default: [:]][record.id!] = (seq, record) }
    func replace(_ record: Record) { classes[record.className]?[record.id!]?.record = record }
    func record(_ className: String, _ id: String) -> Record? { classes[className]?[id]?.record }
    func remove(_ className: String, _ id: String) -> Bool { classes[className]?.removeValue(forKey: id) != nil }
    func all(_ className: String) -> [Record] {
        (classes[className] ?? [:]).values.sorted { $0.seq < $1.seq }.map(\.record)
    }
    func putFile(_ name: String, _ data: Data, _ info: FileInfo) { files[name] = (data, info) }
    func file(_ name: String) -> (data: Data, info: FileInfo)? { files[name] }
    func removeFile(_ name: String) -> Bool { files.removeValue(forKey: name) != nil }
    func addUser(_ name: String, _ password: String) -> String? {
        guard users[name] == nil else { return nil }
        let id = nextID("u").0
        users[name] = (id, password)
        return id
    }
    func newToken(for userId: String) -> String {
        let token = "t" + nextID("t").0
        tokens[token] = userId
        return token
    }
    func user(token: String) -> (id: String, name: String)? {
        guard let id = tokens[token], let name = users.first(where: { $0.value.id == id })?.key else { return nil }
        return (id, name)
    }
    func endSession(_ token: String) { tokens[token] = nil }
}
