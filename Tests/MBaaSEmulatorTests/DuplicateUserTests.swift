import Foundation
import MBaaSCore
import MBaaSEmulator
import Testing

/// A sign-up whose user name or e-mail is taken is answered with the vendor's code for that field, decided on the
/// store's ``MBaaSCore/MBaaSError/refusedField``, never on the wording of its message: a user name that contains
/// "mail" is still a taken user name.
@Suite("Duplicate sign-ups name the taken field")
struct DuplicateUserTests {
    @Test("NCMB: a taken user name is 'userName is duplication.' even when the name contains 'mail'; a taken e-mail is 'mailAddress'")
    func ncmb() async throws {
        let dialect = try makeDialect()
        func signUp(_ json: String) async throws -> (Int, JSON) {
            let r = await dialect.respond(to: try signedRequest(dialect, "POST", "/users", body: Data(json.utf8)))
            return (r.status.code, try JSON.parse(r.body))
        }
        let (first, _) = try await signUp(#"{"userName":"mailroom","password":"pw","mailAddress":"a@example.com"}"#)
        #expect(first == 201)
        let (name, nameBody) = try await signUp(#"{"userName":"mailroom","password":"pw","mailAddress":"b@example.com"}"#)
        #expect(name == 409)
        #expect(nameBody == .object(["code": "E409001", "error": "userName is duplication."]))
        let (mail, mailBody) = try await signUp(#"{"userName":"other","password":"pw","mailAddress":"a@example.com"}"#)
        #expect(mail == 409)
        #expect(mailBody == .object(["code": "E409001", "error": "mailAddress is duplication."]))
    }

    @Test("Parse: a taken user name is code 202 even when the name contains 'mail'; a taken e-mail is 203")
    func parse() async throws {
        let dialect = try makeParseDialect()
        func signUp(_ json: JSON) async throws -> (Int, Int64?) {
            let r = await dialect.respond(to: parseRequest(dialect, .post, "/users", json: json))
            return (r.status.code, parseCode(r))
        }
        let (first, _) = try await signUp(.object(["username": "mailroom", "password": "pw", "email": "a@example.com"]))
        #expect(first == 201)
        let name = try await signUp(.object(["username": "mailroom", "password": "pw", "email": "b@example.com"]))
        #expect(name.0 == 400 && name.1 == 202)
        let mail = try await signUp(.object(["username": "other", "password": "pw", "email": "a@example.com"]))
        #expect(mail.0 == 400 && mail.1 == 203)
    }
}
