import MBaaSCore
import MBaaSReplay
import Testing
@testable import MBaaSNCMB

/// NCMB's wire profile names what the neutral record/replay layer needs to know about the signed protocol.
@Suite("NCMB wire profile")
struct NCMBWireProfileTests {
    @Test func theFactoryDeclaresTheNCMBProfile() {
        #expect(NCMBBackendFactory().wireProfile == .ncmb)
        #expect(WireProfile.ncmb.requiresHost)
    }

    @Test func signedHeadersAreVolatileAndCredentialsSecret() {
        let p = WireProfile.ncmb
        for name in ["X-NCMB-Timestamp", "X-NCMB-Signature", "X-NCMB-Response-Signature", "X-NCMB-SDK-Version",
                     "X-NCMB-OS-Version", "date", "user-agent"] {
            #expect(p.isVolatileHeader(name), "\(name) volatile")
        }
        for name in ["X-NCMB-Application-Key", "X-NCMB-Signature", "X-NCMB-Apps-Session-Token", "Authorization"] {
            #expect(p.isSecretHeader(name), "\(name) secret")
        }
        #expect(!p.isSecretHeader(NCMBSigner.Header.timestamp))
        #expect(p.isTokenField("sessionToken"))
        // Recorded: the key and the session (as placeholders); not the clock or the signature over it.
        let request = HeaderSelection.request(for: p)
        #expect(request.contains("X-NCMB-Application-Key") && request.contains("X-NCMB-Apps-Session-Token"))
        #expect(!request.contains("X-NCMB-Timestamp") && !request.contains("X-NCMB-Signature"))
        #expect(!HeaderSelection.response(for: p).contains("X-NCMB-Response-Signature"))
    }
}
