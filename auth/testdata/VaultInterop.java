// Reference implementation of blindexec's stored credential format v1 for
// the Java (RuoYi) side, and the other half of auth/vault_java_test.go.
//
//   java VaultInterop encrypt KEY_B64 USER_ID CREDENTIAL_KEY   < plaintext   -> prints the stored string
//   java VaultInterop decrypt KEY_B64 USER_ID CREDENTIAL_KEY STORED          -> prints the plaintext
//
// Plaintexts travel as UTF-8 on stdin/stdout so that the platform charset
// does not matter. Exit status 1 on any failure (e.g. authentication).
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public final class VaultInterop {
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;
    private static final SecureRandom RANDOM = new SecureRandom();

    /** kid: first 8 hex characters of SHA-256 of the raw 32-byte key. */
    static String keyId(byte[] key) throws GeneralSecurityException {
        byte[] d = MessageDigest.getInstance("SHA-256").digest(key);
        return String.format("%02x%02x%02x%02x", d[0], d[1], d[2], d[3]);
    }

    /** AAD: UTF-8 of "<user_id decimal>:<credential_key>". */
    static byte[] aad(long userId, String credentialKey) {
        return (Long.toString(userId) + ":" + credentialKey).getBytes(StandardCharsets.UTF_8);
    }

    static String encrypt(byte[] key, long userId, String credentialKey, String plaintext) throws GeneralSecurityException {
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        c.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(TAG_BITS, nonce));
        c.updateAAD(aad(userId, credentialKey));
        byte[] sealed = c.doFinal(plaintext.getBytes(StandardCharsets.UTF_8)); // ciphertext || tag
        byte[] payload = new byte[NONCE_BYTES + sealed.length];
        System.arraycopy(nonce, 0, payload, 0, NONCE_BYTES);
        System.arraycopy(sealed, 0, payload, NONCE_BYTES, sealed.length);
        return "v1:" + keyId(key) + ":" + Base64.getEncoder().encodeToString(payload);
    }

    static String decrypt(byte[] key, long userId, String credentialKey, String stored) throws GeneralSecurityException {
        String[] parts = stored.split(":", 3);
        if (parts.length != 3 || !parts[0].equals("v1")) {
            throw new GeneralSecurityException("not a v1 stored credential");
        }
        if (!parts[1].equals(keyId(key))) {
            throw new GeneralSecurityException("encrypted under key id " + parts[1] + ", have " + keyId(key));
        }
        byte[] payload = Base64.getDecoder().decode(parts[2]);
        if (payload.length < NONCE_BYTES + TAG_BITS / 8) {
            throw new GeneralSecurityException("payload too short");
        }
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        c.init(Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(TAG_BITS, payload, 0, NONCE_BYTES));
        c.updateAAD(aad(userId, credentialKey));
        byte[] plain = c.doFinal(payload, NONCE_BYTES, payload.length - NONCE_BYTES);
        return new String(plain, StandardCharsets.UTF_8);
    }

    private static byte[] readAll(InputStream in) throws java.io.IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        in.transferTo(out);
        return out.toByteArray();
    }

    public static void main(String[] args) {
        try {
            if (args.length < 4) {
                throw new IllegalArgumentException("usage: encrypt|decrypt KEY_B64 USER_ID CREDENTIAL_KEY [STORED]");
            }
            byte[] key = Base64.getDecoder().decode(args[1]);
            long userId = Long.parseLong(args[2]);
            String out;
            switch (args[0]) {
                case "encrypt":
                    out = encrypt(key, userId, args[3], new String(readAll(System.in), StandardCharsets.UTF_8));
                    break;
                case "decrypt":
                    if (args.length != 5) {
                        throw new IllegalArgumentException("decrypt needs STORED");
                    }
                    out = decrypt(key, userId, args[3], args[4]);
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + args[0]);
            }
            System.out.write(out.getBytes(StandardCharsets.UTF_8));
            System.out.flush();
        } catch (Exception e) {
            System.err.println("VaultInterop: " + e);
            System.exit(1);
        }
    }
}
