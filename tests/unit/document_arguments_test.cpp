// What a report document records to be regenerated (reports/document_arguments.h) and the paths
// its commands show (reports/portable_command.h).
#include "reports/document_arguments.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "reports/portable_command.h"

namespace cedar {
namespace {

TEST(DocumentArguments, RoundTripThroughTheDocument) {
  DocumentArguments a;
  a.db = "results/x.db";
  a.suite = "x";
  a.claims = "experiments/x.yaml";
  a.findings = "docs/x_findings.md";
  a.document = "docs/x.md";
  a.target = 0.85;
  a.workers = {8, 32};
  const std::string doc = "# Title\n\n" + document_arguments_comment(a) + "\nBody\n";
  const DocumentArguments b = read_document_arguments(doc, "docs/x.md");
  EXPECT_EQ(b.db, a.db);
  EXPECT_EQ(b.suite, a.suite);
  EXPECT_EQ(b.claims, a.claims);
  EXPECT_EQ(b.findings, a.findings);
  EXPECT_EQ(b.document, a.document);
  EXPECT_EQ(b.target, a.target);
  EXPECT_EQ(b.workers, a.workers);
  EXPECT_EQ(document_arguments_comment(b), document_arguments_comment(a));
  EXPECT_THROW(read_document_arguments("# Title\n\nBody\n", "docs/x.md"), std::runtime_error);
  EXPECT_EQ(document_commands(a),
            "build/cedar suite experiments/x.yaml --db results/x.db\n"
            "build/cedar report results/x.db --suite x --target 0.85 --claims experiments/x.yaml "
            "--workers 8,32 --document docs/x.md --findings docs/x_findings.md\n"
            "# the document and its plots' data again, from the results dump beside it "
            "(docs/x.sql.gz):\nbuild/cedar report --regenerate docs/x.md\n");
}

TEST(DocumentArguments, DatabaseAndDumpPaths) {
  EXPECT_EQ(document_dump_path("docs/x.md"), "docs/x.sql.gz");
  EXPECT_EQ(repository_db_path("results/x.db", "docs/y.md"), "results/x.db");
  EXPECT_EQ(repository_db_path("./results//x.db", "docs/y.md"), "results/x.db");
  EXPECT_EQ(repository_db_path("/tmp/x.db", "docs/y.md"), "results/y.db");
  EXPECT_EQ(repository_db_path("../elsewhere/x.db", "docs/y.md"), "results/y.db");
}

TEST(PortableCommand, PathsInsideTheRepository) {
  EXPECT_EQ(portable_command("/work/main/build/cedar run /home/a/cedar/experiments/x.yaml --db "
                             "/tmp/r.db --set 'algorithm={name: ps, mode: bsp}' --resume",
                             "results/x.db", "experiments/x.yaml"),
            "build/cedar run experiments/x.yaml --db results/x.db --set 'algorithm={name: ps, "
            "mode: bsp}' --resume");
  EXPECT_EQ(portable_command("cedar run experiments/x.yaml --db=/tmp/r.db", "results/x.db",
                             "experiments/x.yaml"),
            "build/cedar run experiments/x.yaml --db=results/x.db");
  // Not a cedar program: kept as recorded; quoted words with spaces stay one word.
  EXPECT_EQ(portable_command("python3 \"a b\" --db 'c d'", "r.db", ""),
            "python3 \"a b\" --db r.db");
}

}  // namespace
}  // namespace cedar
