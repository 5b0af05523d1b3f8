// Prints java.util.Random draws for tests/nexmark/test_java_random.py, one seed per line:
// seed, then nextInt(bound) for each bound given, then nextInt(), nextLong(), the bits of
// nextDouble(), nextBoolean(), and Beam's price formula round(10^(nextDouble()*6) * 100).
import java.util.Random;

public class RandomDump {
    public static void main(String[] args) {
        long first = Long.parseLong(args[0]);
        int count = Integer.parseInt(args[1]);
        int[] bounds = new int[args.length - 2];
        for (int i = 2; i < args.length; i++) {
            bounds[i - 2] = Integer.parseInt(args[i]);
        }
        StringBuilder out = new StringBuilder();
        for (long seed = first; seed < first + count; seed++) {
            Random r = new Random(seed);
            out.append(seed);
            for (int b : bounds) {
                out.append(' ').append(r.nextInt(b));
            }
            out.append(' ').append(r.nextInt());
            out.append(' ').append(r.nextLong());
            out.append(' ').append(Double.doubleToRawLongBits(r.nextDouble()));
            out.append(' ').append(r.nextBoolean() ? 1 : 0);
            out.append(' ').append(Math.round(Math.pow(10.0, r.nextDouble() * 6.0) * 100.0));
            out.append('\n');
        }
        System.out.print(out);
    }
}
