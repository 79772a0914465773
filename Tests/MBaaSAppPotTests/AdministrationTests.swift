import Foundation
import MBaaSAppPot
import MBaaSCore
import Testing

/// User and group administration (reference A10: POST/PUT/DELETE users and groups need Super Admin or Admin).
@Suite("AppPot user and group administration against the simulator")
struct AppPotAdministrationTests {
    static let accounts = AppPotSimulator.defaultAccounts + [
        AppPotSimulator.Account(id: 30, account: "admin", password: "admin-pass", firstName: "Ad", lastName: "Min",
                                groups: [AppPotSimulator.Group(id: 12, name: "Sales", role: "Admin")]),
    ]

    @Test("an Admin imports a user into groups, lists and manages groups, deletes the user; the imported user logs in with a temporary password")
    func administratorManagesTheDirectory() async throws {
        let sim = AppPotSimulator(accounts: Self.accounts)
        let (admin, _) = try await makeBackend(sim)
        _ = try await admin.logIn(username: "admin", password: "admin-pass")
        #expect(admin.capabilities.has(.importUsers))
        let sales = try #require(try await admin.listGroups().first { $0.name == "Sales" })
        let ops = try await admin.createGroup(name: "Support", description: "second line")
        #expect(ops.id != nil && ops.name == "Support")
        #expect(try await admin.listGroups().map(\.name).contains("Support"))
        let imported = try await admin.importUser(
            DirectoryUser(id: "src-1", username: "erin", roles: ["Manager"], groups: [try #require(sales.id)],
                          fields: ["firstName": "Erin", "lastName": "Abe"]),
            password: .temporary("erin-temp-1"))
        #expect(imported.username == "erin" && imported.id != "src-1")
        #expect(imported.groups == [sales.id!] && imported.roles == ["Manager"])
        #expect(try await admin.findUser(username: "erin")?.id == imported.id)
        let (erin, _) = try await makeBackend(sim)
        _ = try await erin.logIn(username: "erin", password: "erin-temp-1")
        // A user without a usable password cannot log in with anything a caller knows.
        _ = try await admin.importUser(DirectoryUser(id: "src-2", username: "frank"), password: .unusable)
        let (frank, _) = try await makeBackend(sim)
        await #expect(throws: MBaaSError.self) { _ = try await frank.logIn(username: "frank", password: "") }
        // Roles are fixed names: importing one is unsupported with the reason.
        let role = await #expect(throws: MBaaSError.self) { try await admin.importRole(DirectoryRole(name: "Admins")) }
        #expect(role?.kind == .unsupported)
        try await admin.deleteUser(id: imported.id)
        #expect(try await admin.findUser(username: "erin") == nil)
        try await admin.deleteGroup(id: try #require(ops.id))
        #expect(try await admin.listGroups().map(\.name).contains("Support") == false)
    }

    @Test("a user who is not an administrator is refused (forbidden) and nothing changes")
    func nonAdministratorIsRefused() async throws {
        let sim = AppPotSimulator(accounts: Self.accounts)
        let (alice, _) = try await makeBackend(sim)
        _ = try await alice.logIn(username: "alice", password: "alice-pass")
        let e = await #expect(throws: MBaaSError.self) {
            _ = try await alice.importUser(DirectoryUser(id: "x", username: "mallory"), password: .temporary("m-pass-1"))
        }
        #expect(e?.kind == .forbidden && e?.vendorCode == "107")
        await #expect(throws: MBaaSError.self) { _ = try await alice.createGroup(name: "Mine") }
        await #expect(throws: MBaaSError.self) { try await alice.deleteUser(id: "21") }
        let mallory = try await alice.findUser(username: "mallory"), bob = try await alice.findUser(username: "bob")
        #expect(mallory == nil && bob != nil)
    }

    /// [doc] reference A10's request example, encoded exactly, and read back (server side).
    @Test("POST users body: the reference's example")
    func userRequestVector() throws {
        let request = AppPotUserRequest(account: "user1", firstName: "Taro", lastName: "Yamada", password: "pass",
                                        groups: [AppPotGroupRole(groupId: "1", roleName: "User")])
        let expected = try JSON.parse(#"{"account":"user1","firstName":"Taro","lastName":"Yamada","password":"pass","groupRoleMap":[{"group":{"groupId":1},"role":{"roleName":"User"}}]}"#)
        #expect(request.json == expected)
        let read = try AppPotUserRequest(json: expected)
        #expect(read.account == "user1" && read.groups.first?.groupId == "1" && read.groups.first?.roleName == "User")
        #expect(throws: MBaaSError.self) { try AppPotUserRequest(json: .object(["password": "x"])) }
        // GET groups (A10): {groups:[{groupId, groupName, description}]}.
        let groups = try AppPotGroup.list(try JSON.parse(#"{"status":"OK","groups":[{"groupId":1,"groupName":"Sales","description":""}]}"#))
        #expect(groups == [AppPotGroup(id: "1", name: "Sales")])
    }
}
