import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing

/// A second ``ServerStore`` that is not `LocalBackend`: it forwards every call to one and counts them. A dialect
/// that passes on it depends on the protocol only (the emulator module does not even link the Local adapter).
struct ForwardingServerStore: ServerStore {
    let inner: LocalBackend
    let calls: CallCounter

    var adapterName: String { "forwarding" }
    var capabilities: Capabilities { inner.capabilities }
    func close() async { await inner.close() }

    func sharing(session: Session?, administrative: Bool?) -> ForwardingServerStore {
        calls.increment()
        return ForwardingServerStore(inner: inner.sharing(session: session, administrative: administrative), calls: calls)
    }

    // ObjectStore
    func create(_ record: Record) async throws -> Record { calls.increment(); return try await inner.create(record) }
    func get(className: String, id: String) async throws -> Record { calls.increment(); return try await inner.get(className: className, id: id) }
    func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        calls.increment(); return try await inner.update(className: className, id: id, update)
    }
    func delete(className: String, id: String, expectedVersion: String?) async throws {
        calls.increment(); try await inner.delete(className: className, id: id, expectedVersion: expectedVersion)
    }
    func queryPage(_ query: Query) async throws -> RecordPage { calls.increment(); return try await inner.queryPage(query) }
    func count(_ query: Query) async throws -> Int { calls.increment(); return try await inner.count(query) }
    func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] { calls.increment(); return try await inner.batch(operations) }
    func narrowedACL(_ acl: ACL) async throws -> ACL { try await inner.narrowedACL(acl) }
    func preflight(className: String, records: [Record]) async throws { try await inner.preflight(className: className, records: records) }
    func recordACLs(className: String, ids: [String]) async throws -> [String: ACL] { try await inner.recordACLs(className: className, ids: ids) }

    // FileStore
    func upload(_ upload: FileUpload) async throws -> FileReference { calls.increment(); return try await inner.upload(upload) }
    func download(_ file: FileReference) async throws -> Data { calls.increment(); return try await inner.download(file) }
    func download(_ file: FileReference, into write: @Sendable (Data) throws -> Void,
                  progress: (@Sendable (TransferProgress) -> Void)?) async throws {
        calls.increment(); try await inner.download(file, into: write, progress: progress)
    }
    func deleteFile(_ file: FileReference) async throws { calls.increment(); try await inner.deleteFile(file) }
    func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] { calls.increment(); return try await inner.listFiles(prefix: prefix, limit: limit) }
    func fileACL(_ file: FileReference) async throws -> ACL? { try await inner.fileACL(file) }

    // Authenticator
    func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        calls.increment(); return try await inner.signUp(username: username, password: password, email: email, fields: fields)
    }
    func logIn(username: String, password: String) async throws -> Session { calls.increment(); return try await inner.logIn(username: username, password: password) }
    func logOut(confirmWithServer: Bool) async throws { calls.increment(); try await inner.logOut(confirmWithServer: confirmWithServer) }
    func currentUser() async throws -> User { calls.increment(); return try await inner.currentUser() }
    var session: Session? { get async { await inner.session } }
    func restore(_ session: Session?) async { await inner.restore(session) }

    // BackendAdministration
    func listClasses() async throws -> [String] { try await inner.listClasses() }
    func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage { try await inner.listUsers(after: cursor, limit: limit) }
    func listRoles() async throws -> [DirectoryRole] { try await inner.listRoles() }
    func findUser(username: String) async throws -> DirectoryUser? { try await inner.findUser(username: username) }
    func findUser(field: String, equals value: String) async throws -> DirectoryUser? { try await inner.findUser(field: field, equals: value) }
    func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser { try await inner.importUser(user, password: password) }
    func importRole(_ role: DirectoryRole) async throws { try await inner.importRole(role) }

    // ServerStore
    func setRoles(_ roles: [String], forUser userId: String) async throws { calls.increment(); try await inner.setRoles(roles, forUser: userId) }
    func setGroups(_ groups: [String], forUser userId: String) async throws { calls.increment(); try await inner.setGroups(groups, forUser: userId) }
    func user(id: String) async throws -> User { calls.increment(); return try await inner.user(id: id) }
    func deleteUser(id: String) async throws { calls.increment(); try await inner.deleteUser(id: id) }
    func repairACL(className: String, id: String, acl: ACL) async throws -> Record {
        calls.increment(); return try await inner.repairACL(className: className, id: id, acl: acl)
    }
    func repairFileACL(name: String, acl: ACL) async throws -> FileInfo { calls.increment(); return try await inner.repairFileACL(name: name, acl: acl) }
}

@Suite("Dialects on any ServerStore")
struct ServerStoreWrapperTests {
    @Test("the NCMB dialect on a store that is not LocalBackend passes the conformance suite as on Local")
    func ncmbConformanceOnAWrapper() async throws {
        let calls = CallCounter()
        let store = ForwardingServerStore(inner: try LocalBackend.inMemory(options: LocalBackend.Options(passwordHashing: .testing)), calls: calls)
        let dialect = NCMBDialect(store: store, configuration: NCMBDialect.Configuration(applicationKey: "wrap-key", clientKey: "wrap-client"))
        let url = try BackendURL(parsing: "ncmb+http://wrap-key:wrap-client@127.0.0.1:8080")
        let suite = try ConformanceSuite.bundled()
        let onWrapper = await ConformanceRunner.live(adapter: "ncmb", factory: NCMBBackendFactory(), url: url,
                                                     transport: EmulatorTransport(dialect), scenarios: suite.scenarios)
        let onLocal = await ConformanceRunner.live(adapter: "ncmb", factory: NCMBBackendFactory(), url: url,
                                                   transport: EmulatorTransport(try makeDialect(applicationKey: "wrap-key", clientKey: "wrap-client")),
                                                   scenarios: suite.scenarios)
        let bad = onWrapper.filter { $0.outcome != .passed && $0.outcome != .skipped }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        #expect(Set(onWrapper.filter { $0.outcome == .passed }.map(\.scenario)) == Set(onLocal.filter { $0.outcome == .passed }.map(\.scenario)))
        #expect(onWrapper.filter { $0.outcome == .passed }.count > 50)
        #expect(calls.value > 100, "the dialect called the wrapper (\(calls.value) calls)")
    }
}
