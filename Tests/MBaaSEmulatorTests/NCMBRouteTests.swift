import MBaaSNCMBWire
import Testing

/// `NCMBRoute(path:apiVersion:)` reads request paths as the emulator receives them (percent-encoded, no query).
@Suite("NCMB routes")
struct NCMBRouteTests {
    @Test("every route reads back from its own path; percent escapes, a trailing slash and the version are read as NCMB's")
    func pathsParse() {
        let routes: [NCMBRoute] = [
            .objects(NCMBClassName("Memo")), .object(NCMBClassName("Memo"), id: "abc"),
            .objects(.user), .object(.user, id: "u1"), .objects(.role), .object(.role, id: "r1"),
            .objects(.installation), .object(.installation, id: "i1"), .objects(.push), .object(.push, id: "p1"),
            .login, .logout, .files, .file("a b/ü.txt"), .requestPasswordReset, .batch,
            .object(NCMBClassName("Memo"), id: "id with space"),
        ]
        for route in routes {
            #expect(NCMBRoute(path: route.fullPath()) == route, "\(route.fullPath())")
        }
        let memo = NCMBClassName("Memo")
        let table: [(String, NCMBRoute?)] = [
            ("/2013-09-01/classes/Memo/abc/", .object(memo, id: "abc")),
            ("/2013-09-01/%63lasses/Memo", .objects(memo)),
            ("/2013-09-01/classes/Me%6Do", .objects(memo)),
            ("/2013-09-01/files/%E3%81%82.txt", .file("あ.txt")),
            ("/2013-09-01/users", .objects(.user)),
            ("/2013-09-01/login/", .login),
            ("/2013-09-01/classes/user", nil),          // built-in classes have their own paths
            ("/2013-09-01/classes", nil),
            ("/2013-09-01/classes/Memo/abc/x", nil),
            ("/2013-09-01/classes//abc", nil),
            ("/2013-09-01/classes/Memo%zz", nil),       // malformed escape
            ("/2013-09-01/classes/Memo%FF", nil),       // not UTF-8
            ("/2013-09-01/login/x", nil),
            ("/2013-09-01/", nil),
            ("/2013-09-01", nil),
            ("/2013-09-02/classes/Memo", nil),
            ("/2013-09-01x/classes/Memo", nil),
            ("2013-09-01/classes/Memo", nil),
            ("/2013-09-01/unknown", nil),
            ("", nil),
        ]
        for (path, expected) in table {
            #expect(NCMBRoute(path: path) == expected, "\(path)")
        }
        #expect(NCMBRoute(path: "/v2/classes/Memo", apiVersion: "v2") == .objects(memo))
        #expect(NCMBRoute(path: "/2013-09-01/classes/Memo", apiVersion: "v2") == nil)
    }
}
