import Foundation
import MBaaSCore
import MBaaSLocal
import Testing

@Suite("sqlite: URLs and capabilities")
struct FactoryTests {
    @Test func urlFormsOpenTheRightDatabase() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let registry = BackendRegistry([LocalBackendFactory(options: testOptions)])
        #expect(registry.schemes == ["sqlite"] && registry.adapterNames == ["local"])

        let path = dir.appendingPathComponent("app.db").path
        let a = try await registry.open("sqlite://" + path)            // sqlite:///abs/path
        let memo = try await a.create(Record(className: "Memo", fields: ["n": 1]))
        let b = try await registry.open("sqlite:" + path)              // sqlite:PATH
        #expect(try await b.get(className: "Memo", id: memo.id!) == memo)
        #expect(a.adapterName == "local")
        #expect(FileManager.default.fileExists(atPath: path))

        let m1 = try await registry.open("sqlite::memory:"), m2 = try await registry.open("sqlite::memory:")
        _ = try await m1.create(Record(className: "Memo"))
        #expect(try await m1.count(Query("Memo")) == 1)
        #expect(try await m2.count(Query("Memo")) == 0)                  // each :memory: database is private

        let filesDir = dir.appendingPathComponent("blobs")
        let c = try await registry.open("sqlite:\(dir.appendingPathComponent("c.db").path)?files=\(filesDir.path)")
        _ = try await c.upload(Data([1]), name: "x")
        #expect(try FileManager.default.contentsOfDirectory(atPath: filesDir.path).count == 1)

        await expectError(.invalidRequest) { try await registry.open("sqlite://somehost/x.db") }
        await expectError(.invalidRequest) { try await registry.open("sqlite:" + dir.appendingPathComponent("missing/x.db").path) }
        for backend in [a, b, m1, m2, c] { await backend.close() }
    }

    @Test func capabilitiesDeclareEverythingImplemented() throws {
        let caps = try memoryBackend().capabilities
        for feature: Capabilities.Feature in [.objects, .multiKeySort, .skip, .selectKeys, .count, .batch, .atomicBatch,
                                              .optimisticLocking, .acl, .fieldOperations, .nestedKeys, .files, .fileList,
                                              .fileAttachment, .auth, .signUp, .serverLogout, .roles] {
            #expect(caps.has(feature), "missing \(feature)")
        }
        #expect(caps.operators == Set(QueryOperator.allCases))
        #expect(caps.has(.valueType("GeoPoint")) && caps.has(.valueType("Bytes")))
        #expect(!caps.has(.anonymousAuth) && caps.note(for: .anonymousAuth) != nil)
    }
}

@Suite("Local wire profile")
struct LocalWireProfileTests {
    @Test func sqliteURLsNeedNoHostButRefuseOne() async throws {
        let factory = LocalBackendFactory(options: testOptions)
        #expect(!factory.wireProfile.requiresHost)
        #expect(throws: Never.self) { try factory.checkURLForm(BackendURL(scheme: "sqlite", path: ":memory:")) }
        // A host is still refused, by the factory, naming the problem.
        await #expect { try await BackendRegistry([factory]).open("sqlite://somehost/x.db") } throws: {
            ($0 as? MBaaSError)?.message.contains("names a host") == true
        }
    }
}
