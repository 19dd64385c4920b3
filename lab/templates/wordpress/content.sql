-- Generated content of `overload lab up wordpress`, in bulk (INSERT … SELECT from MariaDB's
-- Sequence engine, not one request per post): users, categories, posts, comments, and the
-- counters WordPress keeps. Post n has ID 100 + n; ids below 100 are the installer's.
SET @base = TIMESTAMP('2022-01-01 08:00:00');
START TRANSACTION;
INSERT INTO wp_users (user_login, user_pass, user_nicename, user_email, user_url,
                      user_registered, user_activation_key, user_status, display_name)
    SELECT CONCAT('user', seq), '', CONCAT('user', seq), CONCAT('user', seq, '@lab.invalid'),
           '', @base - INTERVAL seq MINUTE, '', 0, CONCAT('User ', seq)
    FROM seq_1_to_{{USERS}};
INSERT INTO wp_terms (name, slug, term_group)
    SELECT CONCAT('Topic ', seq), CONCAT('topic-', seq), 0 FROM seq_1_to_{{CATEGORIES}};
INSERT INTO wp_term_taxonomy (term_id, taxonomy, description, parent, count)
    SELECT term_id, 'category', '', 0, 0 FROM wp_terms WHERE slug LIKE 'topic-%';
-- About 2 KB of text per post; every post names one of ten subjects, for the searches.
INSERT INTO wp_posts (ID, post_author, post_date, post_date_gmt, post_content, post_title,
                      post_excerpt, post_status, comment_status, ping_status, post_password,
                      post_name, to_ping, pinged, post_modified, post_modified_gmt,
                      post_content_filtered, post_parent, guid, menu_order, post_type,
                      post_mime_type, comment_count)
    SELECT 100 + seq, 2 + seq % {{USERS}}, -- user 1 is the installer's admin
           d, d,
           CONCAT('<!-- wp:paragraph --><p>Post ', seq, ' is about ', subj, '. ',
                  REPEAT('Lorem ipsum dolor sit amet, consectetur adipiscing elit. ', 12),
                  '</p><!-- /wp:paragraph --><!-- wp:paragraph --><p>',
                  REPEAT(CONCAT('More on ', subj, ': sed do eiusmod tempor incididunt ut labore. '), 12),
                  '</p><!-- /wp:paragraph -->'),
           CONCAT('Notes on ', subj, ', part ', seq), '', 'publish', 'open', 'open', '',
           CONCAT('post-', seq), '', '', d, d, '', 0,
           CONCAT('http://127.0.0.1/?p=', 100 + seq), 0, 'post', '', 0
    FROM (SELECT seq, @base + INTERVAL seq * {{STEP_MINUTES}} MINUTE AS d,
                 ELT(1 + seq % 10, 'queues', 'latency', 'caching', 'databases', 'kernels',
                     'sockets', 'threads', 'memory', 'schedulers', 'networks') AS subj
          FROM seq_1_to_{{POSTS}}) s;
INSERT INTO wp_term_relationships (object_id, term_taxonomy_id, term_order)
    SELECT p.ID, tt.term_taxonomy_id, 0
    FROM wp_posts p
    JOIN wp_terms t ON t.slug = CONCAT('topic-', 1 + p.ID % {{CATEGORIES}})
    JOIN wp_term_taxonomy tt ON tt.term_id = t.term_id AND tt.taxonomy = 'category'
    WHERE p.ID > 100 AND p.post_type = 'post';
UPDATE wp_term_taxonomy tt
    SET count = (SELECT COUNT(*) FROM wp_term_relationships r
                 WHERE r.term_taxonomy_id = tt.term_taxonomy_id)
    WHERE taxonomy = 'category';
-- Each comment comes after its post.
INSERT INTO wp_comments (comment_post_ID, comment_author, comment_author_email,
                         comment_author_url, comment_author_IP, comment_date, comment_date_gmt,
                         comment_content, comment_karma, comment_approved, comment_agent,
                         comment_type, comment_parent, user_id)
    SELECT 101 + seq % {{POSTS}}, CONCAT('Reader ', seq % 997),
           CONCAT('reader', seq % 997, '@lab.invalid'), '', '127.0.0.1', d, d,
           CONCAT('Comment ', seq, ': ', REPEAT('Thanks, this helped with my setup. ', 1 + seq % 5)),
           0, '1', '', 'comment', 0, 0
    FROM (SELECT seq, @base + INTERVAL ((1 + seq % {{POSTS}}) * {{STEP_MINUTES}} + 1 + seq % 997) MINUTE AS d
          FROM seq_1_to_{{COMMENTS}}) s;
UPDATE wp_posts p
    JOIN (SELECT comment_post_ID AS id, COUNT(*) AS c FROM wp_comments GROUP BY comment_post_ID) x
      ON x.id = p.ID
    SET p.comment_count = x.c;
-- The mark `up` looks for: present only once everything above is in.
DELETE FROM wp_options WHERE option_name = 'overload_lab_content';
INSERT INTO wp_options (option_name, option_value, autoload)
    VALUES ('overload_lab_content', '{{MARK}}', 'no');
COMMIT;
